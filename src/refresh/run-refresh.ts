import { promises as fs } from 'node:fs';
import path from 'node:path';
import { errorMessage } from '../errors.js';
import { componentLogger, type Logger } from '../log/logger.js';
import { PHASES, runPhase, type InProcessStep, type PhaseName } from './phase-runner.js';
import { PhaseFailedError } from './refresh-errors.js';
import { acquireRefreshLock } from './refresh-lock.js';
import { runPartsFilter } from './run-parts-selection.js';

export type { InProcessStep, PhaseName } from './phase-runner.js';
export { PHASES } from './phase-runner.js';

// One os-refresh-config run: take the lock, run the phases in order (a missing phase directory is skipped), and on
// the first failure run error.d (its result ignored) and stop. `timeoutSeconds` bounds the phases as a whole, as
// upstream's --timeout does; error.d then gets a fresh allowance of the same length (upstream left it unbounded).

export interface RunRefreshOptions {
  readonly baseDir: string;
  readonly lockfile: string;
  /** Seconds for all phases together; 0: no limit. */
  readonly timeoutSeconds: number;
  /** Phases to run, in upstream order whatever order they are given in (default: all). */
  readonly phases?: readonly PhaseName[];
  /** Run the migration phase (default true, as upstream always runs it when its directory exists). */
  readonly includeMigration?: boolean;
  /** Environment the scripts start from (environment.d is sourced on top of it for every phase). */
  readonly env: Readonly<Record<string, string>>;
  readonly log: Logger;
  readonly signal: AbortSignal;
  readonly inProcessSteps?: readonly InProcessStep[];
  /** Where scripts' stdout and stderr go (default: the agent's stderr, fd 2). */
  readonly scriptOutput?: number | 'ignore';
}

export async function runRefresh(opts: RunRefreshOptions): Promise<void> {
  // Inside the daemon's pipeline the lines already name their component.
  const log = componentLogger(opts.log, 'refresh');
  const wanted = new Set<PhaseName>(opts.phases ?? PHASES);
  if (opts.includeMigration === false) wanted.delete('migration');
  const phases = PHASES.filter((p) => wanted.has(p));
  const filter = runPartsFilter(opts.env.RUN_PARTS_REGEX);
  const envDir = path.join(opts.baseDir, 'environment.d');
  const deadlineFromNow = () => (opts.timeoutSeconds > 0 ? performance.now() + opts.timeoutSeconds * 1000 : undefined);
  const common = {
    envDir,
    env: opts.env,
    filter,
    signal: opts.signal,
    log,
    ...(opts.scriptOutput !== undefined ? { output: opts.scriptOutput } : {}),
  };

  const lock = await acquireRefreshLock(opts.lockfile);
  try {
    const deadline = deadlineFromNow();
    for (const phase of phases) {
      const dir = path.join(opts.baseDir, `${phase}.d`);
      try {
        await runPhase({
          ...common,
          phase,
          dir,
          steps: (opts.inProcessSteps ?? []).filter((s) => s.phase === phase),
          ...(deadline !== undefined ? { deadline } : {}),
        });
      } catch (err) {
        if (!(err instanceof PhaseFailedError)) throw err;
        if (err.details.timedOut) log.error({ timeoutSeconds: opts.timeoutSeconds }, 'refresh timeout reached');
        log.error(
          {
            phase,
            script: err.details.script,
            exitCode: err.details.scriptExitCode,
            killedBy: err.details.scriptSignal ?? undefined,
            err: err.message,
          },
          'phase failed',
        );
        if (!err.details.aborted && !opts.signal.aborted)
          await runErrorHandlers(opts.baseDir, common, deadlineFromNow(), log);
        log.error({ phase }, 'aborting refresh');
        throw err;
      }
    }
  } finally {
    await lock.release();
  }
}

async function runErrorHandlers(
  baseDir: string,
  common: Omit<Parameters<typeof runPhase>[0], 'phase' | 'dir'>,
  deadline: number | undefined,
  log: Logger,
): Promise<void> {
  const dir = path.join(baseDir, 'error.d');
  try {
    await fs.stat(dir);
  } catch {
    return;
  }
  log.info({ dir }, 'calling error handlers');
  try {
    await runPhase({ ...common, phase: 'error', dir, ...(deadline !== undefined ? { deadline } : {}) });
  } catch (err) {
    // Upstream ignores error.d's own result; it is still worth a line.
    log.warn({ err: errorMessage(err) }, 'error handler failed');
  }
}
