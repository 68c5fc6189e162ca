import { MetadataCache } from '../cache/metadata-cache.js';
import type { AfterCollectHook } from '../pipeline/contract.js';
import { findCollector } from '../collectors/registry.js';
import {
  hashConfigFiles,
  loadConfig,
  registerConfigSecrets,
  type ConfigSources,
  type LoadedConfig,
} from '../config/load.js';
import { logProblems } from '../config/log-problems.js';
import { AgentError, CommandFailedError, errorMessage } from '../errors.js';
import { agentStatusPath } from '../status/agent-facts.js';
import type { HttpClient } from '../http/types.js';
import type { Logger } from '../log/logger.js';
import { exportAgentPid } from './agent-pid-env.js';
import { AgentStatusPublisher } from './agent-status.js';
import { collectAll, type CollectionOutcome, type CollectorMemories } from './collect-all.js';
import { createCommandPipeline } from './command-pipeline.js';
import type { Pipeline } from './pipeline.js';
import { capPhaseOffset, nextSleepSeconds, splaySeconds, withJitter } from './schedule.js';
import { RetryLoop, type RetryPassResult } from './retry-loop.js';
import { InstalledFilesWatch, startedBySystemd } from './self-upgrade.js';
import type { ServiceNotifier } from './service-notifier.js';
import { Waker } from './waker.js';
import { watchSources, type SourceWatcher } from './watch.js';
import { YieldingLoop } from './yielding-loop.js';

// The agent's reconcile loop: collect -> (self-configure) -> run the pipeline if anything changed -> commit.
// `collect` mode is os-collect-config (the configured command is the pipeline); `run` mode uses the native pipeline
// when it is enabled and available.

export type AgentMode = 'collect' | 'run';

// The after-collect hook's types live with the collection outcome (pipeline/contract.ts) so hooks below the daemon
// can implement them.
export type { AfterCollectContext, AfterCollectHook } from '../pipeline/contract.js';

export interface AgentDeps {
  readonly sources: ConfigSources;
  readonly log: Logger;
  readonly mode: AgentMode;
  readonly createHttp: (loaded: LoadedConfig, log: Logger) => HttpClient;
  /** Builds the in-process pipeline for `run` mode (apply + deployments), when this build has one. */
  readonly nativePipeline?: (loaded: LoadedConfig, log: Logger) => Pipeline;
  readonly afterCollect?: readonly AfterCollectHook[];
  /** Background work of the daemon beside the poll loop (the deployment signal outbox): one pass, due again when it says. */
  readonly backgroundPass?: (
    loaded: LoadedConfig,
    log: Logger,
    http: HttpClient,
    signal: AbortSignal,
  ) => Promise<RetryPassResult>;
  /**
   * Re-runs of finished deployments on their reconverge intervals: one pass, due again when it says. A cycle with new
   * data stops it and holds it off while its pipeline runs: a new deployment goes first.
   */
  readonly reconverge?: (
    loaded: LoadedConfig,
    log: Logger,
    http: HttpClient,
    signal: AbortSignal,
  ) => Promise<RetryPassResult>;
  /**
   * The queue of signals `os-config-agent cfn-signal` left for the daemon: a service that runs until the signal
   * aborts (in both loop modes; never with one_time).
   */
  readonly signalQueue?: (
    ctx: { loaded: () => LoadedConfig; http: () => HttpClient; log: Logger },
    signal: AbortSignal,
  ) => Promise<void>;
  /** Non-zero exit in one-time mode when a source held bad data (not for the upstream-compatible command). */
  readonly strictExit?: boolean;
  /** True when deployments wait for this boot (the reboot they asked for): the first cycle then runs on unchanged metadata. */
  readonly resumeAfterBoot?: (loaded: LoadedConfig, log: Logger) => Promise<boolean>;
  readonly random?: () => number;
  /** The service manager (systemd Type=notify): told when start-up is done, of the loop's progress, of shutdown. */
  readonly service?: ServiceNotifier;
  /**
   * The agent's entry bundle as installed (the file node runs): the daemon loop records its identity at start and
   * compares it after every pass, to notice that the agent was upgraded under it (self-upgrade.ts). Off when absent.
   */
  readonly entryFile?: string;
  /** The environment systemd started the process with (INVOCATION_ID, NOTIFY_SOCKET); process.env by default. */
  readonly env?: NodeJS.ProcessEnv;
}

export interface CycleReport {
  readonly changedKeys: readonly string[];
  readonly ran: boolean;
  readonly exitCode: number;
  readonly failures: CollectionOutcome['failures'];
}

const BAD_INPUT_CODES = new Set([
  'ERR_SOURCE_INVALID_DATA',
  'ERR_SOURCE_INSECURE',
  'ERR_HTTP_TOO_LARGE',
  'ERR_SOURCE_UNEXPECTED',
]);

export class Agent {
  private loadedConfig: LoadedConfig;
  private http: HttpClient;
  private readonly memory: CollectorMemories = new Map();
  private readonly failing = new Set<string>();
  private readonly waker = new Waker();
  private reloadRequested = false;
  private watcher: SourceWatcher | undefined;
  /** The daemon loop's facts for `status` (not in one-time runs). */
  private status: AgentStatusPublisher | undefined;
  /** The re-runs of finished deployments, while the daemon loop runs. */
  private reconverger: YieldingLoop | undefined;

  private constructor(
    private readonly deps: AgentDeps,
    loaded: LoadedConfig,
  ) {
    this.loadedConfig = loaded;
    this.http = deps.createHttp(loaded, deps.log.child({ component: 'http' }));
  }

  static async create(deps: AgentDeps): Promise<Agent> {
    const loaded = await loadConfig(deps.sources);
    logProblems(loaded, deps.log);
    return new Agent(deps, loaded);
  }

  get loaded(): LoadedConfig {
    return this.loadedConfig;
  }

  /** Ask the loop to reload its configuration before the next cycle (SIGHUP). */
  requestReload(): void {
    this.reloadRequested = true;
    this.waker.wake();
  }

  async reload(): Promise<void> {
    try {
      const next = await loadConfig(this.deps.sources);
      logProblems(next, this.deps.log);
      const unread = unreadableFiles(this.loadedConfig, next);
      if (unread.length > 0) {
        // A file being replaced, or a permission mistake: the configuration in force is the last good one, and stays.
        registerConfigSecrets(this.loadedConfig.config);
        this.deps.log.error(
          { files: unread.map((f) => next.paths.unmap(f)), reason: 'a config file could not be read' },
          'configuration reload failed; keeping the previous configuration',
        );
        return;
      }
      this.loadedConfig = next;
      this.http = this.deps.createHttp(next, this.deps.log.child({ component: 'http' }));
      this.deps.log.info({ files: next.files.map((f) => next.paths.unmap(f)) }, 'configuration reloaded');
      // The intervals may have changed.
      this.reconverger?.wake();
    } catch (err) {
      this.deps.log.error({ err }, 'configuration reload failed; keeping the previous configuration');
    }
  }

  /** Collect without storing: the merged view `--print` shows. */
  async collectOnly(signal: AbortSignal): Promise<CollectionOutcome> {
    return collectAll(this.collectDeps(signal), undefined);
  }

  /** One full cycle. Never throws for source or pipeline failures: they are in the report. */
  async cycle(signal: AbortSignal, force = false): Promise<CycleReport> {
    const log = this.deps.log;
    const cache = new MetadataCache(this.loadedConfig.config.DEFAULT.cachedir, log.child({ component: 'cache' }));
    let outcome = await collectAll(this.collectDeps(signal), cache);
    for (const hook of this.deps.afterCollect ?? []) {
      const { reload } = await hook(outcome, { loaded: this.loadedConfig, log, signal });
      if (reload) {
        await this.reload();
        // The new configuration is used in this same cycle (no second loop, no restart).
        outcome = await collectAll(
          this.collectDeps(signal),
          new MetadataCache(this.loadedConfig.config.DEFAULT.cachedir, log.child({ component: 'cache' })),
        );
        break;
      }
    }
    const badInput = outcome.failures.some((f) => BAD_INPUT_CODES.has(f.code));
    const failureExit = this.deps.strictExit && badInput ? 1 : 0;
    if (outcome.changedKeys.length === 0 && !force) {
      log.debug('no changes detected');
      return { changedKeys: [], ran: false, exitCode: failureExit, failures: outcome.failures };
    }
    const config = this.loadedConfig.config;
    const activeCache = new MetadataCache(config.DEFAULT.cachedir, log.child({ component: 'cache' }));
    try {
      await activeCache.storeMetaList(outcome.files);
      await activeCache
        .backup(config.DEFAULT.backup_cachedir)
        .catch((err: unknown) =>
          log.warn(
            { dir: config.DEFAULT.backup_cachedir, reason: errorMessage(err) },
            'could not refresh the backup cache directory',
          ),
        );
    } catch (err) {
      log.error(
        { code: (err as AgentError).code, reason: errorMessage(err) },
        'cache write failed; nothing run or committed',
      );
      return { changedKeys: outcome.changedKeys, ran: false, exitCode: 1, failures: outcome.failures };
    }
    log.info({ changed: outcome.changedKeys, force }, 'metadata changed');
    const hashBefore = await hashConfigFiles(this.loadedConfig.hashedFiles);
    const pipeline = this.choosePipeline();
    let exitCode = 0;
    if (pipeline) {
      // A re-run of a finished deployment gives way to the cycle's new data, and none starts while the pipeline runs.
      await this.reconverger?.hold();
      try {
        log.info({ pipeline: pipeline.name }, 'running pipeline');
        await pipeline.run({
          loaded: this.loadedConfig,
          log: log.child({ component: pipeline.name }),
          signal,
          configFiles: outcome.files,
          pairs: outcome.pairs,
          changedKeys: outcome.changedKeys,
          force,
        });
      } catch (err) {
        exitCode = err instanceof CommandFailedError ? err.exitCode : 1;
        log.error(
          { code: err instanceof AgentError ? err.code : undefined, reason: errorMessage(err), exitCode },
          'pipeline failed; new data not committed',
        );
      } finally {
        this.reconverger?.release();
      }
    }
    if (exitCode === 0 && !signal.aborted) {
      for (const key of outcome.changedKeys) await activeCache.commit(key);
      log.info({ committed: outcome.changedKeys.length }, 'cycle complete; cache committed');
    } else if (exitCode === 0) {
      log.info('shutdown during the cycle; new data not committed');
    }
    // Upstream re-execs when the config files changed after a command run; here: reload in-process.
    if ((await hashConfigFiles(this.loadedConfig.hashedFiles)) !== hashBefore) this.reloadRequested = true;
    return {
      changedKeys: outcome.changedKeys,
      ran: pipeline !== undefined,
      exitCode: exitCode || failureExit,
      failures: outcome.failures,
    };
  }

  /**
   * The daemon loop (or one cycle with one_time). Returns the process exit code. The loop ends when `outer` aborts
   * (SIGTERM), or by itself, the same way, when the agent's files were upgraded under systemd.
   */
  async run(outer: AbortSignal): Promise<number> {
    const stop = new AbortController();
    const onOuter = () => stop.abort();
    if (outer.aborted) stop.abort();
    else outer.addEventListener('abort', onOuter, { once: true });
    try {
      return await this.runUntil(stop);
    } finally {
      outer.removeEventListener('abort', onOuter);
    }
  }

  private async runUntil(stop: AbortController): Promise<number> {
    const signal = stop.signal;
    const log = this.deps.log;
    const random = this.deps.random ?? Math.random;
    const config = this.loadedConfig.config;
    const service = this.deps.service;
    const stallMs = () => this.loadedConfig.config.agent.watchdog_stall * 1000;
    const onStop = () => service?.stopping();
    signal.addEventListener('abort', onStop, { once: true });
    try {
      // Deployments waiting for this boot (the reboot they asked for): the first cycle runs on unchanged metadata.
      const resume = await this.resumeAfterBoot();
      if (config.DEFAULT.one_time) {
        service?.progress(stallMs(), stallMs());
        service?.ready();
        try {
          return (await this.cycle(signal, config.DEFAULT.force || resume)).exitCode;
        } catch (err) {
          log.error({ err, code: err instanceof AgentError ? err.code : undefined }, 'cycle failed; nothing committed');
          return 1;
        }
      }
      return await this.loop(stop, random, resume);
    } finally {
      signal.removeEventListener('abort', onStop);
      // An abort has said it already (the listener); a one-time cycle ends without one.
      if (!signal.aborted) service?.stopping();
      await service?.close();
    }
  }

  /**
   * `resume`: force cycles until one succeeds (deployments wait for this boot). Everything the loop starts learns
   * which process the agent is (agent-pid-env.ts), for as long as the loop runs.
   */
  private async loop(stop: AbortController, random: () => number, resumeAfterBoot: boolean): Promise<number> {
    const restorePidEnv = exportAgentPid();
    try {
      return await this.passes(stop, random, resumeAfterBoot);
    } finally {
      restorePidEnv();
    }
  }

  private async passes(stop: AbortController, random: () => number, resumeAfterBoot: boolean): Promise<number> {
    const signal = stop.signal;
    let resume = resumeAfterBoot;
    const log = this.deps.log;
    const service = this.deps.service;
    const stallMs = () => this.loadedConfig.config.agent.watchdog_stall * 1000;
    let config = this.loadedConfig.config;
    this.status = new AgentStatusPublisher(
      agentStatusPath(this.loadedConfig.paths),
      this.deps.mode,
      log.child({ component: 'status' }),
    );
    // systemd's own variable, or the notifier made from NOTIFY_SOCKET (which was taken out of the environment).
    const underSystemd = startedBySystemd(this.deps.env ?? process.env) || service !== undefined;
    const installed = await InstalledFilesWatch.start(
      this.deps.entryFile,
      underSystemd,
      log.child({ component: 'self-upgrade' }),
    );
    await this.startWatching();
    const background = this.startBackground(signal);
    const reruns = this.startReconverge(signal);
    const queue = this.startSignalQueue(signal);
    // Ready once the configuration is loaded and the loop entered, not after the first cycle: that cycle may run
    // deployments for as long as their timeouts allow, which no start-up timeout should have to cover.
    service?.progress(stallMs(), stallMs());
    service?.ready();
    if (config.DEFAULT.splay > 0) {
      const delay = splaySeconds(config.DEFAULT.splay, random());
      service?.progress(delay * 1000 + stallMs(), stallMs());
      log.info({ seconds: delay }, 'splay: delaying the first poll');
      await this.waker.wait(delay * 1000, signal);
    }
    let sleep: number | undefined;
    while (!signal.aborted) {
      if (this.reloadRequested) {
        this.reloadRequested = false;
        await this.reload();
        config = this.loadedConfig.config;
        sleep = undefined;
        await this.restartWatching();
      }
      service?.progress(stallMs(), stallMs());
      let report: CycleReport;
      this.status.cycleStarted();
      try {
        report = await this.cycle(signal, resume);
        // A failed cycle commits nothing, so the next one must be forced again to finish the deployments.
        if (report.exitCode === 0) resume = false;
      } catch (err) {
        // A cycle must never take the daemon down: log it, keep the last good state, try again after the sleep.
        log.error(
          { err, code: err instanceof AgentError ? err.code : undefined },
          'cycle failed unexpectedly; nothing committed',
        );
        report = { changedKeys: [], ran: false, exitCode: 1, failures: [] };
      }
      if (signal.aborted) break;
      if (report.ran) background?.loop.wake();
      const mem = process.memoryUsage();
      log.debug(
        {
          changed: report.changedKeys.length,
          exitCode: report.exitCode,
          rssMb: mb(mem.rss),
          heapUsedMb: mb(mem.heapUsed),
          heapTotalMb: mb(mem.heapTotal),
        },
        'cycle finished',
      );
      const result = report.exitCode !== 0 ? 'failed' : report.ran ? 'applied' : 'unchanged';
      // Between passes only: the hooks of this one have ended (one of them may have been the upgrade).
      if ((await installed?.check()) === 'restart') {
        await this.status.cycleEnded(result, report.exitCode, undefined);
        stop.abort();
        break;
      }
      if (this.reloadRequested) {
        await this.status.cycleEnded(result, report.exitCode, undefined);
        continue;
      }
      const previous = sleep;
      sleep = nextSleepSeconds(previous, config.DEFAULT.min_polling_interval, config.DEFAULT.polling_interval);
      const spread =
        config.agent.poll_jitter > 0 ? capPhaseOffset(previous, sleep, config.DEFAULT.polling_interval, random()) : 0;
      const seconds = withJitter(sleep, config.agent.poll_jitter, random()) + spread;
      await this.status.cycleEnded(
        result,
        report.exitCode,
        Date.now() + seconds * 1000,
        config.DEFAULT.polling_interval,
      );
      log.debug({ seconds: Number(seconds.toFixed(3)) }, 'sleeping');
      service?.progress(seconds * 1000 + stallMs(), stallMs());
      const reason = await this.waker.wait(seconds * 1000, signal);
      if (reason === 'woken') log.debug('woken early');
    }
    await this.watcher?.close();
    await background?.done;
    await reruns;
    this.reconverger = undefined;
    await queue;
    log.info('stopped');
    return 0;
  }

  private async resumeAfterBoot(): Promise<boolean> {
    if (this.deps.mode !== 'run' || !this.loadedConfig.config.agent.native_pipeline) return false;
    try {
      return (await this.deps.resumeAfterBoot?.(this.loadedConfig, this.deps.log)) ?? false;
    } catch (err) {
      this.deps.log.warn({ reason: errorMessage(err) }, 'could not check for deployments waiting for this boot');
      return false;
    }
  }

  /** The background loop, reading the current configuration and HTTP client at each pass (they change on reload). */
  private startBackground(signal: AbortSignal): { loop: RetryLoop; done: Promise<void> } | undefined {
    const pass = this.deps.backgroundPass;
    if (!pass || this.deps.mode !== 'run' || !this.loadedConfig.config.agent.native_pipeline) return undefined;
    const log = this.deps.log.child({ component: 'outbox' });
    const loop = new RetryLoop('signal outbox', (s) => pass(this.loadedConfig, log, this.http, s), log);
    return { loop, done: loop.run(signal) };
  }

  /** The re-runs of finished deployments, beside the poll loop (run mode, native pipeline); never rejects. */
  private startReconverge(signal: AbortSignal): Promise<void> | undefined {
    const pass = this.deps.reconverge;
    if (!pass || this.deps.mode !== 'run' || !this.loadedConfig.config.agent.native_pipeline) return undefined;
    const log = this.deps.log.child({ component: 'reconverge' });
    this.reconverger = new YieldingLoop('deployment re-runs', (s) => pass(this.loadedConfig, log, this.http, s), log);
    return this.reconverger.run(signal);
  }

  /** The cfn-signal queue service; it never rejects (a failure to start is logged, the poll loop goes on). */
  private startSignalQueue(signal: AbortSignal): Promise<void> | undefined {
    const service = this.deps.signalQueue;
    if (!service) return undefined;
    const log = this.deps.log.child({ component: 'signal-queue' });
    return service({ loaded: () => this.loadedConfig, http: () => this.http, log }, signal).catch((err: unknown) => {
      log.error({ reason: errorMessage(err) }, 'signal queue stopped; queued signals wait for the next start');
    });
  }

  private choosePipeline(): Pipeline | undefined {
    const config = this.loadedConfig.config;
    const childLog = this.deps.log.child({ component: 'pipeline' });
    if (this.deps.mode === 'run' && config.agent.native_pipeline && this.deps.nativePipeline) {
      return this.deps.nativePipeline(this.loadedConfig, childLog);
    }
    if (config.DEFAULT.command) return createCommandPipeline(config.DEFAULT.command);
    return undefined;
  }

  private collectDeps(signal: AbortSignal) {
    return {
      config: this.loadedConfig.config,
      paths: this.loadedConfig.paths,
      log: this.deps.log,
      http: this.http,
      signal,
      memory: this.memory,
      failing: this.failing,
      ...(this.status ? { onSource: this.sourceObserver(this.status) } : {}),
    };
  }

  private sourceObserver(status: AgentStatusPublisher) {
    return (name: string, failure: { code: string; message: string } | undefined) =>
      status.source(name, failure ? { ok: false, ...failure } : { ok: true });
  }

  private async startWatching(): Promise<void> {
    const config = this.loadedConfig.config;
    if (!config.agent.watch) return;
    const paths = new Set<string>();
    for (const name of config.DEFAULT.collectors) {
      const collector = findCollector(name as Parameters<typeof findCollector>[0]);
      for (const p of collector?.watchPaths?.(config) ?? []) paths.add(p);
    }
    this.watcher = await watchSources(
      [...paths],
      config.agent.watch_debounce * 1000,
      () => this.waker.wake(),
      this.deps.log.child({ component: 'watch' }),
    );
  }

  private async restartWatching(): Promise<void> {
    await this.watcher?.close();
    this.watcher = undefined;
    await this.startWatching();
  }
}

function mb(bytes: number): number {
  return Math.round((bytes / 1048576) * 10) / 10;
}

/**
 * The config files a reload could not read: those it says so of (unreadable, or a --config-file/--config-dir that is
 * gone), and the main file read before when no main file is found now (deleted, or replaced in two steps). A conf.d
 * file that is gone is a change like any other.
 */
function unreadableFiles(before: LoadedConfig, next: LoadedConfig): string[] {
  const files = next.problems.flatMap((p) => (p.unreadable === true && p.file !== undefined ? [p.file] : []));
  if (next.hashedFiles.length === 0) files.push(...before.hashedFiles);
  return files;
}
