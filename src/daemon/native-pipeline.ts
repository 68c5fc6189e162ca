import type { LoadedConfig } from '../config/load.js';
import { AgentError, CommandFailedError, errorMessage } from '../errors.js';
import type { HttpClient } from '../http/types.js';
import type { Logger } from '../log/logger.js';
import type { InProcessStep } from '../refresh/run-refresh.js';
import { withRootEnv } from '../util/rooted-path.js';
import type { Pipeline, PipelineContext } from './pipeline.js';

// The `run` pipeline: os-refresh-config's phases with two of upstream's configure.d scripts done in-process at their
// upstream positions: 20-os-apply-config (render templates from this cycle's metadata) and 55-heat-config (run and
// signal the deployments). Users' scripts in the phase directories still run around them in sort order; a script file
// of either name (an image still carrying upstream's) is replaced by the in-process step, so nothing runs twice.
// When the phases have ended, os-apply-config deployments are signalled with the cycle's outcome (upstream never
// signalled them; tripleo-image-elements images carried a 99-refresh-completed script for it).
// The modules are loaded at the first run, so `collect` and an idle daemon never parse them.

export const APPLY_STEP = '20-os-apply-config';
export const DEPLOY_STEP = '55-heat-config';
/** Log name of the end-of-cycle signalling of os-apply-config deployments (not a phase script). */
const SETTLE_STEP = 'cycle-end';

export function createNativePipeline(loaded: LoadedConfig, log: Logger, http: HttpClient): Pipeline {
  return {
    name: 'native',
    run: (ctx) => runNative(loaded, log, http, ctx),
  };
}

async function runNative(loaded: LoadedConfig, log: Logger, http: HttpClient, ctx: PipelineContext): Promise<void> {
  const { config, paths } = loaded;
  const [{ runRefresh }, { resolveBaseDir }] = await Promise.all([
    import('../refresh/run-refresh.js'),
    import('../refresh/base-dir.js'),
  ]);
  const env = phaseEnv(loaded, ctx.configFiles);
  try {
    await runRefresh({
      baseDir: await resolveBaseDir({ configured: config.refresh.base_dir, env, paths, log }),
      lockfile: config.refresh.lockfile,
      timeoutSeconds: config.refresh.timeout,
      env,
      log,
      signal: ctx.signal,
      inProcessSteps: inProcessSteps(loaded, log, http, ctx),
    });
  } catch (err) {
    // The cycle stays uncommitted and is retried; the refresh already logged which phase and script failed.
    const exitCode =
      typeof (err as { exitCode?: unknown }).exitCode === 'number' ? (err as { exitCode: number }).exitCode : 1;
    const code = err instanceof AgentError ? ` [${err.code}]` : '';
    // os-apply-config deployments waiting for this cycle fail with its error (not after a shutdown: it runs again).
    if (!ctx.signal.aborted) await settleAfterFailure(loaded, log, http, ctx, `${errorMessage(err)}${code}`);
    throw new CommandFailedError(
      `configuration phases failed: ${errorMessage(err)}${code}; new data not committed, retrying next cycle`,
      exitCode,
    );
  }
  // A failure here (local state) fails the cycle: it is retried, and the deployments still wait for its end.
  const { settleCycle } = await import('../deploy/deploy-step.js');
  await settleCycle(
    loaded,
    log.child({ step: SETTLE_STEP }),
    http,
    { pairs: ctx.pairs, signal: ctx.signal },
    { ok: true },
  );
}

/** The two configure.d scripts done in-process: render the templates, then run and signal the deployments. */
function inProcessSteps(loaded: LoadedConfig, log: Logger, http: HttpClient, ctx: PipelineContext): InProcessStep[] {
  return [
    {
      phase: 'configure',
      name: APPLY_STEP,
      run: async (stepEnv) => {
        const { applyConfigured } = await import('../apply/configured-apply.js');
        await applyConfigured(loaded, {
          metadataFiles: ctx.configFiles,
          env: stepEnv,
          log: log.child({ step: APPLY_STEP }),
        });
      },
    },
    {
      phase: 'configure',
      name: DEPLOY_STEP,
      run: async (stepEnv, signal) => {
        const { deployFromPairs } = await import('../deploy/deploy-step.js');
        await deployFromPairs(loaded, log.child({ step: DEPLOY_STEP }), http, { pairs: ctx.pairs, signal }, stepEnv);
      },
    },
  ];
}

/** After a failed cycle; its own failure is logged, not thrown over the cycle's. */
async function settleAfterFailure(
  loaded: LoadedConfig,
  log: Logger,
  http: HttpClient,
  ctx: PipelineContext,
  reason: string,
): Promise<void> {
  const slog = log.child({ step: SETTLE_STEP });
  try {
    const { settleCycle } = await import('../deploy/deploy-step.js');
    await settleCycle(loaded, slog, http, { pairs: ctx.pairs, signal: ctx.signal }, { ok: false, reason });
  } catch (err) {
    slog.error(
      { code: err instanceof AgentError ? err.code : undefined, reason: errorMessage(err) },
      'os-apply-config deployments could not be signalled',
    );
  }
}

/** The phases' environment: the agent's, OS_CONFIG_FILES as upstream's command got it, and the root under --root. */
function phaseEnv(loaded: LoadedConfig, configFiles: readonly string[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  env.OS_CONFIG_FILES = configFiles.join(':');
  return withRootEnv(env, loaded.paths);
}
