import type { AgentConfig } from '../config/options.js';
import { errorMessage } from '../errors.js';
import type { HttpClient } from '../http/types.js';
import type { Logger } from '../log/logger.js';
import { VERSION } from '../version.js';
import type { PathMapper } from '../util/rooted-path.js';
import { pythonJsonDumps } from '../util/python-json.js';
import type { JsonObject } from '../util/json-merge.js';
import { withDeployLock } from './deploy-lock.js';
import { parseDeployment, UNGROUPED, type Deployment } from './deployment.js';
import { findHook, hookDirs } from './find-hook.js';
import { BUILTIN_HOOK_GROUPS, loadBuiltinHook, removeWorkFiles } from './hooks/builtin-hooks.js';
import type { BuiltinHook } from './hooks/hook-context.js';
import { readHookStamp } from './hooks/hook-stamp.js';
import { runInProcess, runRemovalInProcess } from './hooks/in-process.js';
import { killOrphanHook, processStartTicks } from './orphan-hook.js';
import { hookNameForGroup, selectComponent } from './hook-name.js';
import { attemptSignal, flushDue, queuedSignal, type FlushReport, type OutboxDeps } from './outbox.js';
import { pruneState } from './prune.js';
import { runHook, type HookRunner } from './run-hook.js';
import { hookScopeProperties } from './hook-scope.js';
import { bodyFromHookResult, failureBody, judgeSignal, signalLimitFor, STATUS_NO_HOOK, STATUS_NOT_EXECUTABLE, trimSignalBody } from './signal-body.js';
import { signalTargetFor } from './signal-target.js';
import { deployLockFile, storeFor, type DeploymentRecord, type SignalRecord, type StateStore, type TransitionListener } from './state-store.js';

// One pass over Heat's deployments, in Heat's order (heat-config's 55-heat-config, made durable):
//   1. every deployment not seen before gets a record (pending); one that deployed/<id>.json already marks as done
//      by an earlier agent is adopted and never run;
//   2. pending (or interrupted) deployments run their hook, one at a time, and their signal is attempted at once;
//   3. deployments gone from the metadata are recorded as removed (a signal not yet delivered for them is dropped:
//      Heat has moved on, and a late signal could be taken for a newer action's);
//   4. other due signals are attempted once; old removed records are pruned.
// A failing, missing or hanging hook is a failure signal, not an error of this function; only local state failures
// (and the lock) throw.

/** A hook interrupted this many times (agent killed, machine rebooted while it ran) is reported failed, not re-run. */
export const MAX_HOOK_STARTS = 2;

/** Groups whose config os-collect-config already hands to the apply step: without a hook they are not an error. */
const APPLY_GROUPS = new Set(['os-apply-config', UNGROUPED]);

export interface DeployContext {
  readonly config: AgentConfig;
  readonly paths: PathMapper;
  readonly log: Logger;
  readonly http: HttpClient;
  /** Aborted on shutdown: the running hook is stopped and left to run again at the next start. */
  readonly signal: AbortSignal;
  /** Heat's deployments list; undefined when the metadata has no `deployments` key (then nothing counts as removed). */
  readonly deployments: readonly unknown[] | undefined;
  readonly runner?: HookRunner;
  /** Environment of the hooks (default: the agent's). */
  readonly env?: NodeJS.ProcessEnv;
  readonly now?: () => number;
  readonly random?: () => number;
  /** Called after each state change is on disk (tests use it to kill the process at every step). */
  readonly onTransition?: TransitionListener;
  /** Milliseconds between SIGTERM and SIGKILL when a hook times out. */
  readonly killGraceMs?: number;
}

export interface DeployFailure {
  readonly id: string;
  readonly name: string;
  readonly reason: string;
}

export interface DeployReport {
  /** Valid deployments in the metadata. */
  readonly total: number;
  readonly invalid: number;
  /** Ids whose hook ran in this pass. */
  readonly ran: readonly string[];
  /** Deployments that completed in this pass with a failure (as Heat will judge the signal). */
  readonly failed: readonly DeployFailure[];
  readonly skipped: readonly string[];
  readonly removed: readonly string[];
  readonly pruned: readonly string[];
  readonly signals: FlushReport;
  /** Stopped early by a shutdown. */
  readonly interrupted: boolean;
}

export function runDeployments(ctx: DeployContext): Promise<DeployReport> {
  return withDeployLock(deployLockFile(ctx.config), () => new Dispatcher(ctx).run());
}

/** How a configuration cycle (collect, apply, the phases, the deployments) ended. */
export type CycleOutcome = { readonly ok: true } | { readonly ok: false; readonly reason: string };

export interface SettleReport {
  /** os-apply-config deployments whose signal was queued (and attempted). */
  readonly signalled: readonly string[];
  readonly failed: readonly DeployFailure[];
}

/**
 * Signals the os-apply-config deployments of `ctx.deployments` that wait for the end of this cycle (state `applied`);
 * when the cycle failed, with its error. Call it once the cycle's outcome is known.
 */
export function settleAppliedDeployments(ctx: DeployContext, outcome: CycleOutcome): Promise<SettleReport> {
  return withDeployLock(deployLockFile(ctx.config), () => new Dispatcher(ctx).settleApplied(outcome));
}

class Dispatcher {
  private readonly now: () => number;
  private readonly store: StateStore;
  private readonly outbox: OutboxDeps;
  private readonly runner: HookRunner;
  private readonly ran: string[] = [];
  private readonly failed: DeployFailure[] = [];
  private readonly skipped: string[] = [];
  private readonly attempted = new Set<string>();
  private interrupted = false;

  constructor(private readonly ctx: DeployContext) {
    this.now = ctx.now ?? Date.now;
    this.store = storeFor(ctx.config, ctx.log, this.now, ctx.onTransition);
    this.runner = ctx.runner ?? runHook;
    this.outbox = {
      store: this.store,
      http: ctx.http,
      log: ctx.log,
      timeoutSeconds: ctx.config.deploy.signal_timeout,
      maxBackoffSeconds: ctx.config.deploy.signal_max_backoff,
      maxAttempts: Math.max(1, ctx.config.deploy.signal_max_attempts),
      now: this.now,
      random: ctx.random ?? Math.random,
      signal: ctx.signal,
      zaqarWebsockets: ctx.config.zaqar.use_websockets,
    };
  }

  async run(): Promise<DeployReport> {
    const { log } = this.ctx;
    await this.store.init();
    const { list, invalid } = this.parse();
    const records = new Map((await this.store.list()).map((r) => [r.id, r]));
    for (const dep of list) {
      if (this.ctx.signal.aborted) {
        this.interrupted = true;
        break;
      }
      const record = await this.handle(dep, records.get(dep.id));
      records.set(dep.id, record);
      if (this.interrupted) break;
    }
    const current = new Set(list.map((d) => d.id));
    const removed: string[] = [];
    let pruned: string[] = [];
    let signals: FlushReport = { attempted: 0, sent: 0, failed: 0, pending: 0 };
    if (!this.interrupted) {
      if (this.ctx.deployments !== undefined) {
        for (const record of records.values()) {
          if (current.has(record.id) || record.state === 'removed') continue;
          records.set(record.id, await this.markRemoved(record));
          removed.push(record.id);
        }
      }
      signals = await flushDue(this.outbox, this.attempted);
      if (this.ctx.deployments !== undefined) {
        pruned = await pruneState({ store: this.store, records: [...records.values()], current, pruneAfterDays: this.ctx.config.deploy.prune_after, now: this.now(), log });
      }
    }
    const report: DeployReport = { total: list.length, invalid, ran: this.ran, failed: this.failed, skipped: this.skipped, removed, pruned, signals, interrupted: this.interrupted };
    log.info(
      { deployments: report.total, ran: report.ran.length, failed: report.failed.length, removed: removed.length, pruned: pruned.length, signalsPending: signals.pending, interrupted: report.interrupted },
      'deployments processed',
    );
    return report;
  }

  private parse(): { list: Deployment[]; invalid: number } {
    const { log } = this.ctx;
    const list: Deployment[] = [];
    const seen = new Set<string>();
    let invalid = 0;
    for (const [index, raw] of (this.ctx.deployments ?? []).entries()) {
      const parsed = parseDeployment(raw);
      if (!parsed.ok) {
        invalid++;
        log.warn({ index, reason: parsed.reason }, 'deployment skipped: invalid');
        continue;
      }
      const dep = parsed.deployment;
      if (seen.has(dep.id)) {
        log.warn({ deploymentId: dep.id, deploymentName: dep.name, index }, 'deployment listed twice; the first entry is used');
        continue;
      }
      seen.add(dep.id);
      for (const problem of parsed.warnings) log.warn({ deploymentId: dep.id, deploymentName: dep.name, problem }, 'deployment has a problem');
      list.push(dep);
    }
    return { list, invalid };
  }

  private async handle(dep: Deployment, existing: DeploymentRecord | undefined): Promise<DeploymentRecord> {
    const fields = { id: dep.id, name: dep.name, group: dep.group, action: dep.action };
    let record = existing;
    if (!record) {
      if (await this.store.hasDeployed(dep.id)) {
        return this.store.create(fields, 'signalled', { adopted: true }, { reason: 'deployed/<id>.json exists: deployed by an earlier agent; not run again' });
      }
      record = await this.store.create(fields);
    } else if (record.state === 'removed') {
      const back = record.stateBeforeRemoval ?? 'pending';
      record = await this.store.transition(record, back, { removedAt: undefined, stateBeforeRemoval: undefined }, { reason: 'listed again' });
    }
    if (record.state !== 'pending' && record.state !== 'running') return record;
    return this.execute(dep, record);
  }

  private async execute(dep: Deployment, record: DeploymentRecord): Promise<DeploymentRecord> {
    const { config, paths, log } = this.ctx;
    const dlog = log.child({ deploymentId: dep.id, deploymentName: dep.name });
    if (record.state === 'running') {
      if (record.hookPid !== undefined && record.hookPidStart !== undefined && (await killOrphanHook(record.hookPid, record.hookPidStart))) {
        dlog.warn({ hookPid: record.hookPid }, 'hook left running by an earlier agent; its process group was killed');
      }
      if (record.hookStarts >= MAX_HOOK_STARTS) {
        const message = `the hook was interrupted ${record.hookStarts} times (the agent stopped or the machine restarted while it ran) and is not started again; trigger the deployment again from Heat to retry`;
        dlog.error({ code: 'ERR_HOOK', hookStarts: record.hookStarts }, 'hook interrupted too often; failure signalled');
        return this.finish(dep, record, failureBody(message, 1), { exitCode: null }, message);
      }
      dlog.warn({ hookStarts: record.hookStarts }, 'hook was interrupted; running it again');
    }
    const selected = selectComponent(dep);
    if (!selected.ok) {
      dlog.warn({ reason: selected.reason }, 'component deployment skipped');
      this.skipped.push(dep.id);
      return this.store.transition(record, 'skipped', { lastError: selected.reason }, { reason: selected.reason });
    }
    const d = selected.deployment;
    const dirs = hookDirs(config, paths, this.ctx.env ?? process.env);
    const lookup = await findHook(d.group, dirs);
    if (!lookup.found) {
      if (APPLY_GROUPS.has(d.group)) return this.awaitCycle(d, record);
      const shownDirs = dirs.map((x) => paths.unmap(x)).join(', ');
      const message = `no hook for group "${d.group}" (looked for "${lookup.name}" in ${shownDirs}); install the hook or correct the deployment's group`;
      dlog.error({ code: 'ERR_HOOK', group: d.group, hookName: lookup.name, searched: shownDirs }, 'hook missing; failure signalled');
      await this.store.writeDeployed(d.id, d.document);
      return this.finish(d, record, failureBody(message, STATUS_NO_HOOK), { exitCode: null }, message);
    }
    const shown = paths.unmap(lookup.found.path);
    if (!lookup.found.runnable) {
      const message = `hook ${shown} ${lookup.found.problem ?? 'cannot be run'}; make it an executable file`;
      dlog.error({ code: 'ERR_HOOK', hook: shown }, 'hook not runnable; failure signalled');
      await this.store.writeDeployed(d.id, d.document);
      return this.finish(d, record, failureBody(message, STATUS_NOT_EXECUTABLE), { exitCode: null }, message);
    }

    const timeoutSeconds = d.hookTimeoutSeconds ?? config.deploy.hook_timeout;
    // deployed/<id>.json first: if it cannot be written (full disk), the record stays pending and no start is counted.
    await this.store.writeDeployed(d.id, d.document);
    record = await this.store.transition(record, 'running', { hook: shown, hookStarts: record.hookStarts + 1, startedAt: this.timestamp(), hookPid: undefined, hookPidStart: undefined }, { hook: shown });
    this.ran.push(d.id);
    // The pid of each process the deployment starts goes into the record as soon as it exists, so an agent that dies
    // alone lets the next one end the orphan. Saves are chained (a built-in hook may start several tools) and awaited
    // before the result is stored: two writes of the record must not cross.
    let pidSaved: Promise<unknown> = Promise.resolve();
    const running = record;
    const onSpawn = (pid: number) => {
      const start = processStartTicks(pid);
      if (start === undefined) return;
      pidSaved = pidSaved.then(() => this.store.save({ ...running, hookPid: pid, hookPidStart: start })).catch((err: unknown) => dlog.warn({ reason: errorMessage(err) }, 'could not record the hook pid'));
    };
    const env = this.hookEnv();
    const builtin = await this.builtinHookFor(lookup.found.path, lookup.name);
    const killGrace = this.ctx.killGraceMs !== undefined ? { killGraceMs: this.ctx.killGraceMs } : {};
    const scope = hookScopeProperties(config, dlog);
    const extra = { ...killGrace, ...(scope ? { scopeProperties: scope } : {}) };
    const result = builtin
      ? await runInProcess({ hook: builtin, deployment: d, env, log: dlog, timeoutMs: timeoutSeconds * 1000, signal: this.ctx.signal, onSpawn, ...extra })
      : await this.runner({ file: lookup.found.path, input: pythonJsonDumps(d.document), env, timeoutMs: timeoutSeconds * 1000, signal: this.ctx.signal, onSpawn, ...extra });
    await pidSaved;
    dlog.info(
      { hook: shown, inProcess: builtin !== undefined, exitCode: result.exitCode, killedBy: result.signal, timedOut: result.timedOut, durationMs: result.durationMs, stdoutBytes: result.stdout.length, stderrBytes: result.stderr.length },
      'hook finished',
    );
    // An in-process hook's lines are already in the log, one by one.
    if (result.stderr !== '' && !builtin) dlog.debug({ stderrTail: result.stderr.slice(-4096) }, 'hook stderr');
    if (result.aborted) {
      // Left in `running`: the next start runs it again (and counts the start).
      this.interrupted = true;
      dlog.info('hook stopped by shutdown; it runs again at the next start');
      return record;
    }
    if (result.timedOut) dlog.error({ code: 'ERR_HOOK', hook: shown, timeoutSeconds }, 'hook timed out; process group killed; failure signalled');
    else if (result.spawnError) dlog.error({ code: 'ERR_HOOK', hook: shown, reason: result.spawnError.code }, 'hook could not be started; failure signalled');
    const body = bodyFromHookResult(result, shown, timeoutSeconds);
    return this.finish(d, record, body, { exitCode: result.exitCode });
  }

  /** Store the result and queue the signal (on disk), then attempt it once. */
  private async finish(dep: Deployment, record: DeploymentRecord, body: JsonObject, extra: { exitCode: number | null }, agentError?: string): Promise<DeploymentRecord> {
    const choice = signalTargetFor(dep);
    const transport = choice.ok ? choice.target.transport : choice.transport;
    const trimmed = trimSignalBody(body, signalLimitFor(transport));
    if (trimmed.trimmed > 0) this.ctx.log.warn({ deploymentId: dep.id, deploymentName: dep.name, trimmedCharacters: trimmed.trimmed, bytes: trimmed.text.length }, 'signal trimmed to fit the size limit');
    const verdict = judgeSignal(trimmed.body, dep.outputs);
    await this.store.writeNotify(dep.id, trimmed.body);
    let signal: SignalRecord;
    if (!choice.ok) {
      signal = { state: 'failed', transport, attempts: 0, lastError: choice.reason };
      this.ctx.log.error({ deploymentId: dep.id, deploymentName: dep.name, code: 'ERR_SIGNAL', reason: choice.reason }, 'signal cannot be sent: bad signal inputs');
    } else if (choice.target.transport === 'NO_SIGNAL') {
      signal = { state: 'none', transport: 'NO_SIGNAL', attempts: 0 };
    } else {
      signal = queuedSignal(choice.target, trimmed.text);
    }
    const lastError = agentError ?? (verdict.failed ? verdict.reason : undefined) ?? (choice.ok ? undefined : choice.reason);
    if (verdict.failed) this.failed.push({ id: dep.id, name: dep.name, reason: agentError ?? verdict.reason ?? 'failed' });
    let next = await this.store.transition(
      record,
      'done',
      { endedAt: this.timestamp(), exitCode: extra.exitCode, statusCode: verdict.statusCode, failed: verdict.failed, lastError, signal },
      { exitCode: extra.exitCode, failed: verdict.failed, ...(verdict.reason ? { reason: verdict.reason } : {}) },
    );
    if (next.signal.state === 'pending') {
      next = await attemptSignal(next, this.outbox);
      this.attempted.add(dep.id);
    }
    return next;
  }

  /**
   * An os-apply-config deployment (no hook: the apply step renders its data). Heat waits for its signal like any
   * other's, and upstream never sent one (the stack timed out), so it is sent when the cycle that applied the data
   * ends: settleApplied(). One that asks for no signal is only recorded.
   */
  private async awaitCycle(d: Deployment, record: DeploymentRecord): Promise<DeploymentRecord> {
    const choice = signalTargetFor(d);
    if (choice.ok && choice.target.transport === 'NO_SIGNAL') {
      this.skipped.push(d.id);
      return this.store.transition(record, 'skipped', {}, { reason: `group ${d.group} has no hook: its config is applied as os-apply-config metadata, and it asks for no signal` });
    }
    return this.store.transition(record, 'applied', {}, { reason: `group ${d.group} has no hook: its config is applied as os-apply-config metadata; signalled when this cycle ends` });
  }

  /**
   * The end of a configuration cycle: every os-apply-config deployment of the cycle's metadata that waits for it is
   * signalled, success when the cycle succeeded; when it failed, with the cycle's error (also those the deployment
   * step never reached: the apply step failed first).
   */
  async settleApplied(outcome: CycleOutcome): Promise<SettleReport> {
    const { log } = this.ctx;
    await this.store.init();
    const { list } = this.parse();
    const records = new Map((await this.store.list()).map((r) => [r.id, r]));
    const signalled: string[] = [];
    for (const dep of list) {
      if (!APPLY_GROUPS.has(dep.group)) continue;
      let record = records.get(dep.id);
      if (outcome.ok) {
        if (record?.state !== 'applied') continue;
      } else {
        if (record !== undefined && record.state !== 'applied' && record.state !== 'pending') continue;
        const choice = signalTargetFor(dep);
        if (choice.ok && choice.target.transport === 'NO_SIGNAL') continue;
        // A user's own hook for the group runs (and signals) in the deployment step of a later cycle.
        if ((await findHook(dep.group, hookDirs(this.ctx.config, this.ctx.paths, this.ctx.env ?? process.env))).found) continue;
        if (record === undefined) {
          if (await this.store.hasDeployed(dep.id)) continue;
          record = await this.store.create({ id: dep.id, name: dep.name, group: dep.group, action: dep.action });
        }
      }
      const body = outcome.ok
        ? { deploy_stdout: `os-apply-config applied the data of deployment ${dep.name} and the configuration cycle completed`, deploy_stderr: '', deploy_status_code: 0 }
        : failureBody(`the configuration cycle that applies the data of deployment ${dep.name} failed: ${outcome.reason}`, 1);
      await this.finish(dep, record, body, { exitCode: null }, outcome.ok ? undefined : `configuration cycle failed: ${outcome.reason}`);
      signalled.push(dep.id);
    }
    if (signalled.length > 0) log.info({ deployments: signalled.length, cycleSucceeded: outcome.ok }, 'os-apply-config deployments signalled');
    return { signalled, failed: this.failed };
  }

  private async markRemoved(record: DeploymentRecord): Promise<DeploymentRecord> {
    await this.undoHook(record);
    await this.removeWorkFiles(record);
    const pending = record.signal.state === 'pending';
    const signal: SignalRecord = pending
      ? { state: 'cancelled', transport: record.signal.transport, attempts: record.signal.attempts, lastError: 'the deployment left the metadata before its signal was delivered' }
      : record.signal;
    return this.store.transition(record, 'removed', { stateBeforeRemoval: record.state, removedAt: this.timestamp(), signal }, pending ? { signalCancelled: true } : {});
  }

  /**
   * The agent's own hook for this group, when the installed file is the agent's own build of it (hook-stamp.ts) and
   * in-process hooks are on; undefined means the file runs as a process.
   */
  private async builtinHookFor(file: string, name: string): Promise<BuiltinHook | undefined> {
    if (!this.ctx.config.deploy.hooks_in_process || !BUILTIN_HOOK_GROUPS.includes(name)) return undefined;
    const stamp = await readHookStamp(file);
    if (stamp?.group !== name || stamp.version !== VERSION) return undefined;
    return loadBuiltinHook(name);
  }

  /**
   * A deployment left the metadata: what its built-in hook left running goes (docker-cmd's containers, a compose
   * project), as upstream's os-refresh-config scripts removed it. A failure is logged; the pass goes on.
   */
  private async undoHook(record: DeploymentRecord): Promise<void> {
    const loading = loadBuiltinHook(hookNameForGroup(record.group));
    if (!loading) return;
    try {
      const hook = await loading;
      if (!hook.removed) return;
      const killGrace = this.ctx.killGraceMs !== undefined ? { killGraceMs: this.ctx.killGraceMs } : {};
      await runRemovalInProcess({ hook, id: record.id, env: this.hookEnv(), log: this.ctx.log, signal: this.ctx.signal, ...killGrace });
      this.ctx.log.info({ deploymentId: record.id, hookGroup: hook.group }, 'hook removal done');
    } catch (err) {
      this.ctx.log.warn({ deploymentId: record.id, reason: errorMessage(err) }, 'hook removal failed');
    }
  }

  /** A deployment left the metadata: the work files its built-in hook kept go (upstream kept them forever). */
  private async removeWorkFiles(record: DeploymentRecord): Promise<void> {
    try {
      const files = await removeWorkFiles(hookNameForGroup(record.group), record.id, this.hookEnv());
      if (files.length > 0) this.ctx.log.debug({ deploymentId: record.id, files: files.map((f) => this.ctx.paths.unmap(f)) }, 'hook work files removed');
    } catch (err) {
      this.ctx.log.warn({ deploymentId: record.id, reason: errorMessage(err) }, 'hook work files could not be removed');
    }
  }

  /**
   * The agent's environment (or the one given); under --root also OS_CONFIG_AGENT_ROOT, so hooks can place their own
   * work files under the same root.
   */
  private hookEnv(): NodeJS.ProcessEnv {
    const env = this.ctx.env ?? process.env;
    return this.ctx.paths.root === '/' ? env : { ...env, OS_CONFIG_AGENT_ROOT: this.ctx.paths.root };
  }

  private timestamp(): string {
    return new Date(this.now()).toISOString();
  }
}
