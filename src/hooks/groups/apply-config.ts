import { applyTemplates } from '../../apply/apply-templates.js';
import { FALLBACK_METADATA, loadMetadata, selectMetadataFiles } from '../../apply/metadata-sources.js';
import { resolveTemplatesDir } from '../../apply/templates-dir.js';
import { AgentError, errorMessage } from '../../errors.js';
import { createLogger, type Logger } from '../../log/logger.js';
import { createPathMapper, ROOT_ENV } from '../../util/rooted-path.js';
import { HookFailure, type BuiltinHook, type HookContext } from '../contract.js';
import type { HookDeclaration, ToolDeclaration } from '../declaration.js';
import type { HookLogFields } from '../kit/hook-log.js';
import { result } from '../hook-result.js';
import { chooseTool, spawnProbe } from '../kit/choose-tool.js';
import { runTool } from '../kit/run-tool.js';

// Group "apply-config": renders the os-apply-config template tree over the current metadata again. Upstream's hook
// runs the os-apply-config program (HEAT_APPLY_CONFIG_CMD, default os-apply-config) with the hook's environment and
// signals its output and status; here the agent's own apply runs in the hook, with what that program would read:
// the templates of $OS_CONFIG_APPLIER_TEMPLATES (or the default tree), the metadata of $OS_CONFIG_FILES (or
// os_config_files.json) over the heat-cfntools fallback files, output to /, not strict. The deployment's config and
// inputs are not used, as upstream. HEAT_APPLY_CONFIG_CMD set to a program still runs that program.

/** Unset, the agent's own apply runs in the hook: nothing to install. */
const APPLY_CONFIG: ToolDeclaration = {
  name: 'os-apply-config',
  variable: 'HEAT_APPLY_CONFIG_CMD',
  defaults: [],
  install: "Install it, or unset HEAT_APPLY_CONFIG_CMD to use the agent's own apply.",
};

export const declaration: HookDeclaration = { group: 'apply-config', tool: APPLY_CONFIG };

export const hook: BuiltinHook = {
  group: declaration.group,
  acceptsNoId: true,

  workFiles: () => [],

  async run(_deployment, ctx) {
    const command = (await chooseTool(APPLY_CONFIG, ctx.env, spawnProbe(ctx)))?.file;
    if (command !== undefined) {
      const run = await runTool(
        ctx,
        { file: command, env: ctx.env },
        `HEAT_APPLY_CONFIG_CMD names ${command}, which was not found: install it or unset the variable to use the agent's own apply`,
      );
      if (run.status === 0) ctx.log.info('apply-config completed', { command });
      else ctx.log.error('apply-config failed', { command, status: run.status });
      return result(run);
    }
    const summary = await applyNatively(ctx);
    ctx.log.info('templates applied', { ...summary });
    // stdout stays empty, as os-apply-config prints nothing when it succeeds; stderr holds the apply's log lines, as
    // upstream's holds os-apply-config's.
    return result({ status: 0, stdout: '', stderr: ctx.log.text() });
  },
};

interface ApplySummary {
  readonly written: number;
  readonly unchanged: number;
  readonly deleted: number;
}

async function applyNatively(ctx: HookContext): Promise<ApplySummary> {
  const { env } = ctx;
  const paths = createPathMapper(env[ROOT_ENV]);
  const log = forwardingLogger(ctx);
  try {
    const templates = await resolveTemplatesDir(undefined, paths, env);
    if (templates.deprecated)
      ctx.log.warn('deprecated template directory in use', { templates: paths.unmap(templates.dir) });
    const listed = await selectMetadataFiles({ env, paths, log });
    const files = [...FALLBACK_METADATA, ...listed].map((f) => paths.map(f));
    const applied = await applyTemplates({
      templatesDir: templates.dir,
      outputDir: paths.map('/'),
      metadata: await loadMetadata(files),
      strict: false,
      log,
    });
    return { written: applied.written.length, unchanged: applied.unchanged.length, deleted: applied.deleted.length };
  } catch (err) {
    // The apply's errors say what to fix (template, control file, metadata); the hook reports them as its failure.
    if (err instanceof AgentError) throw new HookFailure(`${errorMessage(err)} [${err.code}]`);
    throw err;
  }
}

const HOOK_LEVELS: Readonly<Record<string, 'info' | 'warn' | 'error'>> = {
  warn: 'warn',
  error: 'error',
  fatal: 'error',
};

/** The apply logs through pino; its lines become the hook's (masked, kept as its stderr) with their fields. */
function forwardingLogger(ctx: HookContext): Logger {
  return createLogger({
    level: 'info',
    destination: {
      write(line: string) {
        let parsed: Record<string, unknown>;
        try {
          parsed = JSON.parse(line) as Record<string, unknown>;
        } catch {
          ctx.log.info(line.trim());
          return;
        }
        const { level, msg, time: _time, name: _name, ...fields } = parsed;
        const method = (typeof level === 'string' ? HOOK_LEVELS[level] : undefined) ?? 'info';
        ctx.log[method](typeof msg === 'string' ? msg : 'apply', fields as HookLogFields);
      },
    },
  });
}
