import type { HookContext } from '../contract.js';
import type { ToolDeclaration } from '../declaration.js';
import { chooseTool, spawnProbe } from './choose-tool.js';
import { logStandIn } from './docker-cli.js';

// Which compose runs a project, as the docker-compose hook's declaration says: HEAT_DOCKER_COMPOSE_CMD when set
// (upstream's variable, a v1-style command), else compose v2 (`docker compose`) when the docker CLI has it, else v1's
// `docker-compose` (upstream's default).

export interface ComposeCommand {
  readonly file: string;
  /** Arguments before compose's own (["compose"] for v2). */
  readonly prefix: readonly string[];
}

export async function composeCommand(ctx: HookContext, tool: ToolDeclaration): Promise<ComposeCommand> {
  const choice = await chooseTool(tool, ctx.env, spawnProbe(ctx));
  if (choice === undefined || choice.by === 'variable') return { file: choice?.file ?? tool.name, prefix: [] };
  logStandIn(ctx, choice.of);
  if (choice.prefix.length > 0)
    ctx.log.info('using compose v2', { command: [choice.file, ...choice.prefix].join(' ') });
  else ctx.log.info('compose v2 not available; using docker-compose', { command: choice.file });
  return { file: choice.file, prefix: choice.prefix };
}
