import { containerCommand } from './docker-cli.js';
import type { HookContext } from '../contract.js';

// Which compose runs a project: HEAT_DOCKER_COMPOSE_CMD when set (upstream's variable, a v1-style command), else
// compose v2 (`docker compose`) when the docker CLI has it, else v1's `docker-compose` (upstream's default).

export interface ComposeCommand {
  readonly file: string;
  /** Arguments before compose's own (["compose"] for v2). */
  readonly prefix: readonly string[];
}

export async function composeCommand(ctx: HookContext): Promise<ComposeCommand> {
  const configured = ctx.env.HEAT_DOCKER_COMPOSE_CMD;
  if (configured) return { file: configured, prefix: [] };
  const docker = await containerCommand(ctx);
  const probe = await ctx.spawn({ file: docker, args: ['compose', 'version'], env: ctx.env });
  if (probe.exitCode === 0) {
    ctx.log.info('using compose v2', { command: `${docker} compose` });
    return { file: docker, prefix: ['compose'] };
  }
  ctx.log.info('compose v2 not available; using docker-compose', { command: 'docker-compose' });
  return { file: 'docker-compose', prefix: [] };
}
