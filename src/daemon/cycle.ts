import { MetadataCache } from '../cache/metadata-cache.js';
import { hashConfigFiles, type LoadedConfig } from '../config/load.js';
import type { AgentConfig } from '../config/options.js';
import { AgentError, CommandFailedError, errorMessage, type ErrorCode } from '../errors.js';
import type { Logger } from '../log/logger.js';
import type { AfterCollectHook, CollectionOutcome } from '../pipeline/contract.js';
import type { Pipeline } from './pipeline.js';

// One cycle of the reconcile loop: collect (and let self-configuration reconfigure the agent in the same cycle), and
// when anything changed, record the metadata list, refresh the backup, run the pipeline and commit the cache. Source
// and pipeline failures are in the report, never thrown: the loop goes on.

export interface CycleReport {
  readonly changedKeys: readonly string[];
  readonly ran: boolean;
  readonly exitCode: number;
  readonly failures: CollectionOutcome['failures'];
  /** Signals the pipeline sent (or queued) to Heat in this cycle (0 when it did not say, or did not run). */
  readonly signalled?: number;
}

/** What a cycle needs of the agent that runs it. */
export interface CycleHost {
  readonly log: Logger;
  /** The configuration in force now (a reload within the cycle replaces it). */
  loaded(): LoadedConfig;
  readonly afterCollect: readonly AfterCollectHook[];
  /** Exit non-zero when a source held bad data (one-time runs of the agent's own commands). */
  readonly strictExit: boolean;
  /** One collection pass, storing into `cache` (or, without one, only merging). */
  collect(signal: AbortSignal, cache: MetadataCache | undefined): Promise<CollectionOutcome>;
  reload(): Promise<void>;
  /** The pipeline this configuration runs after a change; none when there is nothing to run. */
  pipeline(): Pipeline | undefined;
  /**
   * Background work that gives way to a pipeline (the re-runs of finished deployments): stopped before the pipeline
   * runs and held off until it ends, so that a new deployment goes first.
   */
  background(): { hold(): Promise<void>; release(): void } | undefined;
  /** The config files changed while the pipeline ran: reload before the next cycle. */
  reloadBeforeNextCycle(): void;
}

/** Source failures that are bad data, not an outage: they fail a strict one-time run. */
const BAD_INPUT_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'ERR_SOURCE_INVALID_DATA',
  'ERR_SOURCE_INSECURE',
  'ERR_RESERVED_NAME',
  'ERR_HTTP_TOO_LARGE',
  'ERR_SOURCE_UNEXPECTED',
]);

export async function runCycle(host: CycleHost, signal: AbortSignal, force: boolean): Promise<CycleReport> {
  const log = host.log;
  const outcome = await collectAndConfigure(host, signal);
  const badInput = outcome.failures.some((f) => BAD_INPUT_CODES.has(f.code));
  const failureExit = host.strictExit && badInput ? 1 : 0;
  const report = (ran: boolean, exitCode: number, signalled = 0): CycleReport => ({
    changedKeys: outcome.changedKeys,
    ran,
    exitCode,
    failures: outcome.failures,
    signalled,
  });
  if (outcome.changedKeys.length === 0 && !force) {
    log.debug('no changes detected');
    return report(false, failureExit);
  }
  const config = host.loaded().config;
  const cache = new MetadataCache(config.DEFAULT.cachedir, log.child({ component: 'cache' }));
  if (!(await recordForPipeline(cache, outcome, config, log))) return report(false, 1);
  log.info({ changed: outcome.changedKeys, force }, 'metadata changed');
  const hashBefore = await hashConfigFiles(host.loaded().hashedFiles);
  const pipeline = host.pipeline();
  const { exitCode, signalled } = pipeline
    ? await runPipeline(host, pipeline, outcome, signal, force)
    : { exitCode: 0, signalled: 0 };
  if (exitCode === 0 && !signal.aborted) {
    for (const key of outcome.changedKeys) await cache.commit(key);
    log.info({ committed: outcome.changedKeys.length }, 'cycle complete; cache committed');
  } else if (exitCode === 0) {
    log.info('shutdown during the cycle; new data not committed');
  }
  // Upstream re-execs when the config files changed after a command run; here: reload in-process.
  if ((await hashConfigFiles(host.loaded().hashedFiles)) !== hashBefore) host.reloadBeforeNextCycle();
  return report(pipeline !== undefined, exitCode || failureExit, signalled);
}

/** A collection pass; when self-configuration changed the configuration, it is reloaded and used in this cycle. */
async function collectAndConfigure(host: CycleHost, signal: AbortSignal): Promise<CollectionOutcome> {
  const log = host.log;
  const cacheFor = (loaded: LoadedConfig) =>
    new MetadataCache(loaded.config.DEFAULT.cachedir, log.child({ component: 'cache' }));
  const outcome = await host.collect(signal, cacheFor(host.loaded()));
  for (const hook of host.afterCollect) {
    const { reload } = await hook(outcome, { loaded: host.loaded(), log, signal });
    if (reload) {
      await host.reload();
      // The new configuration is used in this same cycle (no second loop, no restart).
      return host.collect(signal, cacheFor(host.loaded()));
    }
  }
  return outcome;
}

/** The metadata list the pipeline reads, and the backup taken before it runs; false when the cache cannot be written. */
async function recordForPipeline(
  cache: MetadataCache,
  outcome: CollectionOutcome,
  config: AgentConfig,
  log: Logger,
): Promise<boolean> {
  try {
    await cache.storeMetaList(outcome.files);
    await cache
      .backup(config.DEFAULT.backup_cachedir)
      .catch((err: unknown) =>
        log.warn(
          { dir: config.DEFAULT.backup_cachedir, reason: errorMessage(err) },
          'could not refresh the backup cache directory',
        ),
      );
    return true;
  } catch (err) {
    log.error(
      { code: (err as AgentError).code, reason: errorMessage(err) },
      'cache write failed; nothing run or committed',
    );
    return false;
  }
}

/** The pipeline's exit status (0, or the failed command's, 1 for any other failure) and what it signalled. */
async function runPipeline(
  host: CycleHost,
  pipeline: Pipeline,
  outcome: CollectionOutcome,
  signal: AbortSignal,
  force: boolean,
): Promise<{ exitCode: number; signalled: number }> {
  const log = host.log;
  const background = host.background();
  await background?.hold();
  try {
    log.info({ pipeline: pipeline.name }, 'running pipeline');
    const ran = await pipeline.run({
      loaded: host.loaded(),
      log: log.child({ component: pipeline.name }),
      signal,
      configFiles: outcome.files,
      pairs: outcome.pairs,
      changedKeys: outcome.changedKeys,
      force,
    });
    return { exitCode: 0, signalled: ran?.signalled ?? 0 };
  } catch (err) {
    const exitCode = err instanceof CommandFailedError ? err.exitCode : 1;
    log.error(
      { code: err instanceof AgentError ? err.code : undefined, reason: errorMessage(err), exitCode },
      'pipeline failed; new data not committed',
    );
    return { exitCode, signalled: 0 };
  } finally {
    background?.release();
  }
}
