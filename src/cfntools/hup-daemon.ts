import { errorMessage } from '../errors.js';
import type { HttpClient } from '../http/types.js';
import type { Logger } from '../log/logger.js';
import { HookLog, type HookLogLevel } from '../hooks/kit/hook-log.js';
import type { PathMapper } from '../util/rooted-path.js';
import { HupConfigError } from './cfn-errors.js';
import { toolContext } from './cfn-context.js';
import { cfnEndpoint } from './endpoint.js';
import { loadHupConfig, type HupConfig } from './hup-config.js';
import { runHupPass } from './hup-pass.js';

// The daemon's built-in cfn-hup: the check `cfn-hup -f` makes, every `interval` minutes, inside the agent (loaded
// only once /etc/cfn/cfn-hup.conf exists: src/daemon/cfn-hup-service.ts). A configuration that cannot be used is
// reported once, and the last good one stays in force; lines go to the agent's log.

export interface HupDaemonState {
  lastGood?: HupConfig;
  /** The last configuration problem reported, so an unchanged one is not repeated every interval. */
  lastProblem?: string;
}

export interface HupCheckDeps {
  readonly paths: PathMapper;
  readonly env: NodeJS.ProcessEnv;
  readonly http: HttpClient;
  readonly log: Logger;
  readonly signal: AbortSignal;
  /** [cfn] metadata_url, timeout and ca_certificate of the agent's configuration. */
  readonly configuredEndpoint?: string | undefined;
  readonly timeoutSeconds: number;
  readonly caFile?: string | undefined;
}

export interface HupCheckResult {
  /** Milliseconds until the next check (the configuration's interval). */
  readonly nextInMs?: number;
  /** Another check (a cron cfn-hup -f) held the lock: try again soon. */
  readonly busy?: boolean;
}

const SERVICE_TOOL_TIMEOUT_MS = 60_000;
/** However small `interval` is, heat-api-cfn is asked at most once a second. */
const MIN_INTERVAL_MS = 1000;
const LEVELS: Readonly<Record<HookLogLevel, 'info' | 'warn' | 'error'>> = {
  INFO: 'info',
  WARNING: 'warn',
  ERROR: 'error',
};

export async function daemonHupCheck(state: HupDaemonState, deps: HupCheckDeps): Promise<HupCheckResult> {
  const config = await currentConfig(state, deps);
  if (!config) return {};
  const log = new HookLog('cfn-hup', (level, message, fields) => deps.log[LEVELS[level]]({ detail: fields }, message));
  const report = await runHupPass(config, {
    paths: deps.paths,
    ctx: toolContext(deps.env, log, { signal: deps.signal, timeoutMs: SERVICE_TOOL_TIMEOUT_MS }),
    http: async () => deps.http,
    endpoint: () => cfnEndpoint({ paths: deps.paths, configured: deps.configuredEndpoint }),
    timeoutSeconds: deps.timeoutSeconds,
    caFile: deps.caFile,
  });
  if (!report.ran) return { busy: true };
  const failed = report.actions.filter((a) => !a.ok).length;
  const summary = { actions: report.actions.length, failed, errors: report.errors.length };
  if (report.actions.length > 0 || report.errors.length > 0) deps.log.info(summary, 'cfn-hup check done');
  else deps.log.debug(summary, 'cfn-hup check done');
  return { nextInMs: Math.max(MIN_INTERVAL_MS, config.main.intervalMinutes * 60_000) };
}

async function currentConfig(state: HupDaemonState, deps: HupCheckDeps): Promise<HupConfig | undefined> {
  try {
    state.lastGood = await loadHupConfig(deps.paths);
    if (state.lastProblem !== undefined) deps.log.info('cfn-hup configuration usable again');
    state.lastProblem = undefined;
  } catch (err) {
    if (!(err instanceof HupConfigError)) throw err;
    if (state.lastProblem !== err.message)
      deps.log.error(
        { code: err.code, reason: errorMessage(err), keeping: state.lastGood !== undefined },
        state.lastGood ? 'cfn-hup configuration unusable; keeping the last good one' : 'cfn-hup configuration unusable',
      );
    state.lastProblem = err.message;
  }
  return state.lastGood;
}
