import type { MetadataCache } from '../cache/metadata-cache.js';
import type { AgentDeps } from './agent-deps.js';
import { loadConfig, type LoadedConfig } from '../config/load.js';
import type { AgentConfig } from '../config/options.js';
import { logProblems } from '../config/log-problems.js';
import { AgentError, errorMessage, type ErrorCode } from '../errors.js';
import type { HttpClient } from '../http/types.js';
import { agentStatusPath, type CycleResult } from '../status/agent-facts.js';
import { exportAgentPid } from './agent-pid-env.js';
import { AgentStatusPublisher } from './agent-status.js';
import { startBackgroundWork, type BackgroundWork } from './background-work.js';
import { collectAll, newCollectionMemory, type CollectionOutcome } from './collect-all.js';
import { createCommandPipeline } from './command-pipeline.js';
import { reloadConfig } from './config-reload.js';
import { runCycle, type CycleHost, type CycleReport } from './cycle.js';
import type { Pipeline } from './pipeline.js';
import { pollSleep, pollTiming, splaySeconds, type PollStep } from './schedule.js';
import { InstalledFilesWatch, startedBySystemd } from './self-upgrade.js';
import { Waker } from './waker.js';
import { CollectorWatch } from './watch.js';
import type { YieldingLoop } from './yielding-loop.js';

// The agent's reconcile loop: collect -> (self-configure) -> run the pipeline if anything changed -> commit
// (cycle.ts). `collect` mode is os-collect-config (the configured command is the pipeline); `run` mode uses the native
// pipeline when it is enabled and available.

/** What the daemon loop keeps running beside its cycles, stopped when it ends. */
interface LoopServices extends BackgroundWork {
  readonly installed: InstalledFilesWatch | undefined;
}

export class Agent {
  private loadedConfig: LoadedConfig;
  private http: HttpClient;
  /** What the collection passes keep across polls (collect-all.ts): the collectors' memories, the cache's, failures. */
  private readonly kept = newCollectionMemory();
  private readonly waker = new Waker();
  private reloadRequested = false;
  /** A signal reached Heat outside a cycle (outbox, cfn-signal queue) since the last sleep began. */
  private signalledMeanwhile = false;
  private readonly watch: CollectorWatch;
  /** The daemon loop's facts for `status` (not in one-time runs). */
  private status: AgentStatusPublisher | undefined;
  /** The re-runs of finished deployments, while the daemon loop runs: a cycle with new data holds them off. */
  private reconverger: YieldingLoop | undefined;

  private constructor(
    private readonly deps: AgentDeps,
    loaded: LoadedConfig,
  ) {
    this.loadedConfig = loaded;
    this.http = deps.createHttp(loaded, deps.log.child({ component: 'http' }));
    this.watch = new CollectorWatch(() => this.waker.wake(), deps.log.child({ component: 'watch' }));
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
    const next = await reloadConfig(this.loadedConfig, this.deps.sources, this.deps.log);
    if (!next) return;
    try {
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
  cycle(signal: AbortSignal, force = false): Promise<CycleReport> {
    return runCycle(this.cycleHost(), signal, force);
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
    const config = this.loadedConfig.config;
    const service = this.deps.service;
    const onStop = () => service?.stopping();
    signal.addEventListener('abort', onStop, { once: true });
    try {
      // Deployments waiting for this boot (the reboot they asked for): the first cycle runs on unchanged metadata.
      const resume = await this.resumeAfterBoot();
      if (config.DEFAULT.one_time) {
        service?.progress(this.stallMs(), this.stallMs());
        service?.ready();
        try {
          return (await this.cycle(signal, config.DEFAULT.force || resume)).exitCode;
        } catch (err) {
          log.error({ err, code: err instanceof AgentError ? err.code : undefined }, 'cycle failed; nothing committed');
          return 1;
        }
      }
      return await this.loop(stop, resume);
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
  private async loop(stop: AbortController, resumeAfterBoot: boolean): Promise<number> {
    const restorePidEnv = exportAgentPid();
    try {
      return await this.passes(stop, resumeAfterBoot);
    } finally {
      restorePidEnv();
    }
  }

  private async passes(stop: AbortController, resumeAfterBoot: boolean): Promise<number> {
    const signal = stop.signal;
    const random = this.deps.random ?? Math.random;
    const status = new AgentStatusPublisher(
      agentStatusPath(this.loadedConfig.paths),
      this.deps.mode,
      this.deps.log.child({ component: 'status' }),
    );
    this.status = status;
    // The loop's timing follows the configuration in force when it sleeps: the one it started with, reloaded on SIGHUP,
    // or one a self-configuration loaded within the cycle.
    let config = this.loadedConfig.config;
    const services = await this.startLoopServices(signal);
    await this.splay(config.DEFAULT.splay, random, signal);
    let resume = resumeAfterBoot;
    let sleep: PollStep | undefined;
    while (!signal.aborted) {
      if (this.reloadRequested) {
        this.reloadRequested = false;
        await this.reload();
        config = this.loadedConfig.config;
        sleep = undefined;
        await this.watch.restart(config);
      }
      this.deps.service?.progress(this.stallMs(), this.stallMs());
      status.cycleStarted();
      const report = await this.loopCycle(signal, resume);
      // A failed cycle commits nothing, so the next one must be forced again to finish the deployments.
      if (report.exitCode === 0) resume = false;
      if (signal.aborted) break;
      if (report.ran) services.outbox?.loop.wake();
      const result = report.exitCode !== 0 ? 'failed' : report.ran ? 'applied' : 'unchanged';
      // Between passes only: the hooks of this one have ended (one of them may have been the upgrade).
      if ((await services.installed?.check()) === 'restart') {
        await status.cycleEnded(result, report.exitCode, undefined);
        stop.abort();
        break;
      }
      if (this.reloadRequested) {
        await status.cycleEnded(result, report.exitCode, undefined);
        continue;
      }
      const inForce = this.loadedConfig.config;
      // New bounds restart the schedule from the new min_polling_interval rather than doubling the old sleep.
      if (JSON.stringify(pollTiming(config)) !== JSON.stringify(pollTiming(inForce))) sleep = undefined;
      config = inForce;
      sleep = await this.sleepAfter(config, { status, result, report }, sleep, random, signal);
    }
    await this.watch.close();
    await services.outbox?.done;
    await services.reruns?.done;
    this.reconverger = undefined;
    await services.queue;
    await services.cfnHup;
    this.deps.log.info('stopped');
    return 0;
  }

  /** The loop's services, then ready: once the configuration is loaded and the loop entered, not after a cycle. */
  private async startLoopServices(signal: AbortSignal): Promise<LoopServices> {
    const { log, service } = this.deps;
    // systemd's own variable, or the notifier made from NOTIFY_SOCKET (which was taken out of the environment).
    const underSystemd = startedBySystemd(this.deps.env ?? process.env) || service !== undefined;
    const installed = await InstalledFilesWatch.start(
      this.deps.entryFile,
      underSystemd,
      log.child({ component: 'self-upgrade' }),
    );
    await this.watch.restart(this.loadedConfig.config);
    const inForce = { loaded: () => this.loadedConfig, http: () => this.http, signalled: () => this.sentMeanwhile() };
    const native = this.deps.mode === 'run' && this.loadedConfig.config.agent.native_pipeline;
    const work = startBackgroundWork(this.deps, native, inForce, log, signal);
    this.reconverger = work.reruns?.loop;
    // The first cycle may run deployments for as long as their timeouts allow, which no start-up timeout should have
    // to cover.
    service?.progress(this.stallMs(), this.stallMs());
    service?.ready();
    return { installed, ...work };
  }

  /** The configured splay: a random delay before the first poll, so that a fleet booted together spreads out. */
  private async splay(splay: number, random: () => number, signal: AbortSignal): Promise<void> {
    if (splay <= 0) return;
    const delay = splaySeconds(splay, random());
    this.deps.service?.progress(delay * 1000 + this.stallMs(), this.stallMs());
    this.deps.log.info({ delayMs: Math.round(delay * 1000) }, 'splay: delaying the first poll');
    await this.waker.wait(delay * 1000, signal);
  }

  /** A cycle of the loop: one that throws must never take the daemon down. */
  private async loopCycle(signal: AbortSignal, resume: boolean): Promise<CycleReport> {
    const log = this.deps.log;
    let report: CycleReport;
    try {
      report = await this.cycle(signal, resume);
    } catch (err) {
      // Log it, keep the last good state, try again after the sleep.
      log.error(
        { err, code: err instanceof AgentError ? err.code : undefined },
        'cycle failed unexpectedly; nothing committed',
      );
      report = { changedKeys: [], ran: false, exitCode: 1, failures: [] };
    }
    if (signal.aborted) return report;
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
    return report;
  }

  /** Publishes the cycle's end and sleeps until the next poll (or a wake-up); returns the schedule's step. */
  private async sleepAfter(
    config: AgentConfig,
    ended: { status: AgentStatusPublisher; result: CycleResult; report: CycleReport },
    previous: PollStep | undefined,
    random: () => number,
    signal: AbortSignal,
  ): Promise<PollStep> {
    const signalled = (ended.report.signalled ?? 0) > 0 || this.signalledMeanwhile;
    const { step, seconds } = pollSleep(previous, pollTiming(config), signalled, random);
    this.signalledMeanwhile = false;
    const nextAt = Date.now() + seconds * 1000;
    await ended.status.cycleEnded(ended.result, ended.report.exitCode, nextAt, config.DEFAULT.polling_interval);
    this.deps.log.debug({ delayMs: Math.round(seconds * 1000) }, 'sleeping');
    this.deps.service?.progress(seconds * 1000 + this.stallMs(), this.stallMs());
    const reason = await this.waker.wait(seconds * 1000, signal);
    if (reason === 'woken') this.deps.log.debug('woken early');
    return step;
  }

  /** A signal went out beside the loop: the next sleep starts again at min_polling_interval, and the current one ends. */
  private sentMeanwhile(): void {
    this.signalledMeanwhile = true;
    if (this.loadedConfig.config.agent.poll_after_signal) this.waker.wake();
  }

  private stallMs(): number {
    return this.loadedConfig.config.agent.watchdog_stall * 1000;
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

  private cycleHost(): CycleHost {
    return {
      log: this.deps.log,
      loaded: () => this.loadedConfig,
      afterCollect: this.deps.afterCollect ?? [],
      strictExit: this.deps.strictExit === true,
      collect: (signal: AbortSignal, cache: MetadataCache | undefined) => collectAll(this.collectDeps(signal), cache),
      reload: () => this.reload(),
      pipeline: () => this.choosePipeline(),
      background: () => this.reconverger,
      reloadBeforeNextCycle: () => {
        this.reloadRequested = true;
      },
    };
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
    const status = this.status;
    return {
      config: this.loadedConfig.config,
      paths: this.loadedConfig.paths,
      log: this.deps.log,
      http: this.http,
      signal,
      ...this.kept,
      ...(status
        ? {
            onSource: (name: string, failure: { code: ErrorCode; message: string } | undefined) =>
              status.source(name, failure ? { ok: false, ...failure } : { ok: true }),
          }
        : {}),
    };
  }
}

function mb(bytes: number): number {
  return Math.round((bytes / 1048576) * 10) / 10;
}
