import { promises as fs } from 'node:fs';
import type { AgentConfig } from '../config/options.js';
import { errorMessage } from '../errors.js';
import type { HttpClient } from '../http/types.js';
import type { Logger } from '../log/logger.js';
import { VERSION } from '../version.js';
import type { PathMapper } from '../util/rooted-path.js';
import { pythonJsonDumps } from '../util/python-json.js';
import type { JsonObject } from '../util/json-merge.js';
import {
  DeployLockedError,
  DeploymentBusyError,
  DeploymentRecordError,
  UnknownDeploymentError,
} from '../state/errors.js';
import { decide, decideAbsent, needsBootId, type Decision } from '../state/decide.js';
import { withDeployLock } from '../state/deploy-lock.js';
import { parseDeployment, secretInputTexts, UNGROUPED, type Deployment } from '../heat/deployment.js';
import { setSecrets } from '../log/redact.js';
import { findHook, hookDirs } from '../hooks/locate.js';
import { BUILTIN_HOOK_GROUPS, loadBuiltinHook, removeWorkFiles } from '../hooks/registry.js';
import type { BuiltinHook } from '../hooks/contract.js';
import { readHookStamp } from '../hooks/host/stamp.js';
import { runInProcess, runRemovalInProcess } from '../hooks/host/in-process.js';
import { killOrphanHook, processStartTicks } from '../util/process-identity.js';
import { hookNameForGroup, selectComponent } from '../heat/component.js';
import { attemptSignal, flushDue, queuedSignal, type FlushReport, type OutboxDeps } from '../signals/outbox.js';
import { pruneState } from '../state/prune.js';
import { BOOT_ID_FILE, MAX_REBOOTS, readBootId, REBOOT_EXIT_CODE, REBOOTED_ENV, runRebootCommand } from './reboot.js';
import { runHook, type HookRunner } from '../hooks/host/external.js';
import { hookScopeProperties } from '../hooks/host/scope.js';
import {
  bodyFromHookResult,
  failureBody,
  judgeSignal,
  signalLimitFor,
  STATUS_NO_HOOK,
  STATUS_NOT_EXECUTABLE,
  trimSignalBody,
} from '../heat/signal-body.js';
import { signalTargetFor } from '../heat/signal-target.js';
import { isSafeFileName } from '../util/safe-name.js';
import {
  deployLockFile,
  RERUN_HISTORY_MAX,
  storeFor,
  type DeploymentRecord,
  type RerunEntry,
  type SignalRecord,
  type StateStore,
  type TransitionListener,
} from '../state/store.js';

/** The logger's owner of the secret inputs of the deployments in the metadata. */
const DEPLOYMENT_SECRETS_OWNER = 'deployments';

// One pass over Heat's deployments, in Heat's order (heat-config's 55-heat-config, made durable):
//   1. every deployment not seen before gets a record (pending); one that deployed/<id>.json already marks as done
//      by an earlier agent is adopted and never run;
//   2. pending (or interrupted) deployments run their hook, one at a time, and their signal is attempted at once;
//   3. deployments gone from the metadata are recorded as removed (a signal not yet delivered for them is dropped:
//      Heat has moved on, and a late signal could be taken for a newer action's);
//   4. other due signals are attempted once; old removed records are pruned.
// A deployment awaiting the reboot it asked for (reboot.ts) ends the pass while the machine is still in the boot that
// asked: the deployments after it wait for the reboot, in Heat's order.
// A failing, missing or hanging hook is a failure signal, not an error of this function; only local state failures
// (and the lock) throw. A deployment whose record cannot be used is held (left as it is, reported) and the others go
// on. What to do with each deployment is decided by dispatch-decision.ts from what is on disk; this file carries the
// decision out, with the writes in the order of HOOK_RUN_WRITES (deployment-states.ts).

export { MAX_HOOK_STARTS } from '../state/decide.js';

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
  /** Deployments of the metadata whose record cannot be used (DeploymentRecordError): not run until cleared. */
  readonly held: readonly DeployFailure[];
  readonly skipped: readonly string[];
  readonly removed: readonly string[];
  readonly pruned: readonly string[];
  readonly signals: FlushReport;
  /** Stopped early by a shutdown. */
  readonly interrupted: boolean;
  /** A deployment asked for a reboot and the reboot command ran (or the machine is still going down): the pass stopped. */
  readonly awaitingReboot?: boolean;
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

/** Fields of one run's outcome, cleared when a deployment is run again. */
const RUN_FIELDS = [
  'startedAt',
  'endedAt',
  'exitCode',
  'statusCode',
  'failed',
  'lastError',
  'removedAt',
  'stateBeforeRemoval',
  'adopted',
  'reboots',
  'bootId',
  'rebootRequestedAt',
  'rebootCommandRanAt',
  'hookPid',
  'hookPidStart',
] as const;

/** How long --rerun and --forget wait for another process's deployment pass (the lock) before refusing. */
export const OPERATOR_LOCK_WAIT_MS = 60_000;
const LOCK_POLL_MS = 250;

export interface RerunReport {
  readonly record: DeploymentRecord;
  readonly failed: boolean;
  readonly interrupted: boolean;
  readonly awaitingReboot: boolean;
}

/** `deploy --rerun <id>`: see Dispatcher.rerun. Waits up to `lockWaitMs` for a pass of another process to end. */
export async function rerunDeployment(
  ctx: DeployContext,
  id: string,
  lockWaitMs = OPERATOR_LOCK_WAIT_MS,
): Promise<RerunReport> {
  return waitForLock(ctx, lockWaitMs, async () => {
    const dispatcher = new Dispatcher(ctx);
    const record = await dispatcher.rerun(id);
    return { record, ...dispatcher.outcome() };
  });
}

/** `deploy --forget <id>`: see Dispatcher.forget. Returns the record that was deleted, if there was one. */
export function forgetDeployment(
  ctx: DeployContext,
  id: string,
  lockWaitMs = OPERATOR_LOCK_WAIT_MS,
): Promise<DeploymentRecord | undefined> {
  return waitForLock(ctx, lockWaitMs, () => new Dispatcher(ctx).forget(id));
}

/** The deploy lock, retried while another process holds it, for at most `waitMs` (then its DeployLockedError). */
async function waitForLock<T>(ctx: DeployContext, waitMs: number, fn: () => Promise<T>): Promise<T> {
  const now = ctx.now ?? Date.now;
  const deadline = now() + waitMs;
  let logged = false;
  for (;;) {
    try {
      return await withDeployLock(deployLockFile(ctx.config), fn);
    } catch (err) {
      if (!(err instanceof DeployLockedError) || now() >= deadline || ctx.signal.aborted) throw err;
      if (!logged)
        ctx.log.info(
          { holder: err.holderPid, waitSeconds: Math.round(waitMs / 1000) },
          'waiting for the deployment pass of another process',
        );
      logged = true;
      await new Promise((resolve) => setTimeout(resolve, LOCK_POLL_MS));
    }
  }
}

async function exists(file: string): Promise<boolean> {
  try {
    await fs.lstat(file);
    return true;
  } catch {
    return false;
  }
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
  private awaitingReboot = false;

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
    const listed = await this.store.listAll('hold');
    const records = new Map(listed.records.map((r) => [r.id, r]));
    const unusable = new Map(listed.unusable.map((e) => [e.deploymentId, e]));
    const held: DeployFailure[] = [];
    for (const dep of list) {
      if (this.ctx.signal.aborted) {
        this.interrupted = true;
        break;
      }
      const bad = unusable.get(dep.id);
      if (bad) {
        held.push({ id: dep.id, name: dep.name, reason: bad.message });
        continue;
      }
      const record = await this.handle(dep, records.get(dep.id));
      records.set(dep.id, record);
      if (this.interrupted || this.awaitingReboot) break;
    }
    const current = new Set(list.map((d) => d.id));
    const removed: string[] = [];
    let pruned: string[] = [];
    let signals: FlushReport = { attempted: 0, sent: 0, failed: 0, pending: 0 };
    if (!this.interrupted && this.ctx.deployments !== undefined) {
      for (const record of records.values()) {
        if (current.has(record.id) || decideAbsent(record) === 'keep') continue;
        const after = this.ctx.signal.aborted ? undefined : await this.markRemoved(record);
        if (after === undefined) {
          this.interrupted = true;
          break;
        }
        records.set(record.id, after);
        removed.push(record.id);
      }
    }
    if (!this.interrupted) {
      signals = await flushDue(this.outbox, this.attempted);
      if (this.ctx.deployments !== undefined) {
        pruned = await pruneState({
          store: this.store,
          records: [...records.values()],
          unusable: new Set(unusable.keys()),
          current,
          pruneAfterDays: this.ctx.config.deploy.prune_after,
          now: this.now(),
          log,
        });
      }
    }
    const report: DeployReport = {
      total: list.length,
      invalid,
      ran: this.ran,
      failed: this.failed,
      held,
      skipped: this.skipped,
      removed,
      pruned,
      signals,
      interrupted: this.interrupted,
      ...(this.awaitingReboot ? { awaitingReboot: true } : {}),
    };
    log.info(
      {
        deployments: report.total,
        ran: report.ran.length,
        failed: report.failed.length,
        held: held.length,
        removed: removed.length,
        pruned: pruned.length,
        signalsPending: signals.pending,
        interrupted: report.interrupted,
        awaitingReboot: this.awaitingReboot,
      },
      'deployments processed',
    );
    return report;
  }

  /** How the deployments this dispatcher handled ended. */
  outcome(): { failed: boolean; interrupted: boolean; awaitingReboot: boolean } {
    return { failed: this.failed.length > 0, interrupted: this.interrupted, awaitingReboot: this.awaitingReboot };
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
        log.warn(
          { deploymentId: dep.id, deploymentName: dep.name, index },
          'deployment listed twice; the first entry is used',
        );
        continue;
      }
      seen.add(dep.id);
      for (const problem of parsed.warnings)
        log.warn({ deploymentId: dep.id, deploymentName: dep.name, problem }, 'deployment has a problem');
      list.push(dep);
    }
    // The secret inputs of the deployments the metadata lists now, replacing the last pass's: a deployment that is
    // gone takes its secrets off the logger's list.
    setSecrets(DEPLOYMENT_SECRETS_OWNER, list.flatMap(secretInputTexts));
    return { list, invalid };
  }

  private async handle(dep: Deployment, existing: DeploymentRecord | undefined): Promise<DeploymentRecord> {
    const decision = decide({
      record: existing,
      deployedFileExists: existing === undefined && (await this.store.hasDeployed(dep.id)),
      bootId: existing !== undefined && needsBootId(existing) ? await readBootId(this.ctx.paths) : undefined,
    });
    return this.carryOut(dep, existing, decision);
  }

  /** The decision's writes and runs, in the order of HOOK_RUN_WRITES. */
  private async carryOut(
    dep: Deployment,
    existing: DeploymentRecord | undefined,
    decision: Decision,
  ): Promise<DeploymentRecord> {
    const fields = { id: dep.id, name: dep.name, group: dep.group, action: dep.action };
    const dlog = () => this.ctx.log.child({ deploymentId: dep.id, deploymentName: dep.name });
    if (existing === undefined && decision.action === 'adopt') {
      return this.store.create(
        fields,
        'signalled',
        { adopted: true },
        { reason: 'deployed/<id>.json exists: deployed by an earlier agent; not run again' },
      );
    }
    // Without a record the decision is adopt or run (create).
    if (existing === undefined) return this.execute(dep, await this.store.create(fields));
    const record = existing;
    switch (decision.action) {
      case 'run':
        return this.execute(dep, record);
      case 'restore': {
        const back = await this.store.transition(
          record,
          decision.to,
          { removedAt: undefined, stateBeforeRemoval: undefined },
          { reason: 'listed again' },
        );
        return this.carryOut(dep, back, decision.then);
      }
      case 'resume-interrupted':
      case 'fail-interrupted': {
        if (
          decision.killOrphan &&
          record.hookPid !== undefined &&
          record.hookPidStart !== undefined &&
          (await killOrphanHook(record.hookPid, record.hookPidStart))
        ) {
          dlog().warn(
            { hookPid: record.hookPid },
            'hook left running by an earlier agent; its process group was killed',
          );
        }
        if (decision.action === 'fail-interrupted') {
          const message = `the hook was interrupted ${record.hookStarts} times (the agent stopped or the machine restarted while it ran) and is not started again; trigger the deployment again from Heat to retry`;
          dlog().error(
            { code: 'ERR_HOOK', hookStarts: record.hookStarts },
            'hook interrupted too often; failure signalled',
          );
          return this.finish(dep, record, failureBody(message, 1), { exitCode: null }, message);
        }
        dlog().warn({ hookStarts: record.hookStarts }, 'hook was interrupted; running it again');
        return this.execute(dep, record);
      }
      // A deployment that asked for a reboot. In a new boot it runs again, with OS_CONFIG_AGENT_REBOOTED=1, and that
      // run is the one signalled. Still in the boot that asked: the reboot command runs if it never did; otherwise
      // the machine is going down, and the pass stops here.
      case 'run-after-reboot':
        dlog().info({ reboots: record.reboots ?? 0 }, 'machine rebooted as the deployment asked; running it again');
        return this.execute(dep, record, true);
      case 'reboot-now': {
        const selected = selectComponent(dep);
        return this.reboot(selected.ok ? selected.deployment : dep, record);
      }
      case 'wait-for-reboot':
        this.awaitingReboot = true;
        return record;
      // hold: run() holds unusable records before deciding; adopt: only without a record.
      case 'hold':
      case 'adopt':
      case 'keep':
        return record;
    }
  }

  private async execute(dep: Deployment, record: DeploymentRecord, rebooted = false): Promise<DeploymentRecord> {
    const { config, paths, log } = this.ctx;
    const dlog = log.child({ deploymentId: dep.id, deploymentName: dep.name });
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
      dlog.error(
        { code: 'ERR_HOOK', group: d.group, hookName: lookup.name, searched: shownDirs },
        'hook missing; failure signalled',
      );
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
    record = await this.store.transition(
      record,
      'running',
      {
        hook: shown,
        hookStarts: record.hookStarts + 1,
        startedAt: this.timestamp(),
        hookPid: undefined,
        hookPidStart: undefined,
      },
      { hook: shown },
    );
    this.ran.push(d.id);
    // The pid of each process the deployment starts goes into the record as soon as it exists, so an agent that dies
    // alone lets the next one end the orphan. Saves are chained (a built-in hook may start several tools) and awaited
    // before the result is stored: two writes of the record must not cross.
    let pidSaved: Promise<unknown> = Promise.resolve();
    const running = record;
    const onSpawn = (pid: number) => {
      const start = processStartTicks(pid);
      if (start === undefined) return;
      pidSaved = pidSaved
        .then(() => this.store.save({ ...running, hookPid: pid, hookPidStart: start }))
        .catch((err: unknown) => dlog.warn({ reason: errorMessage(err) }, 'could not record the hook pid'));
    };
    // Also for a run after the reboot that was interrupted and is resumed (the record keeps its reboot count).
    const env = rebooted || (record.reboots ?? 0) > 0 ? { ...this.hookEnv(), [REBOOTED_ENV]: '1' } : this.hookEnv();
    const builtin = await this.builtinHookFor(lookup.found.path, lookup.name);
    const killGrace = this.ctx.killGraceMs !== undefined ? { killGraceMs: this.ctx.killGraceMs } : {};
    const scope = hookScopeProperties(config, dlog);
    const extra = { ...killGrace, ...(scope ? { scopeProperties: scope } : {}) };
    const result = builtin
      ? await runInProcess({
          hook: builtin,
          deployment: d,
          env,
          log: dlog,
          timeoutMs: timeoutSeconds * 1000,
          signal: this.ctx.signal,
          onSpawn,
          ...extra,
        })
      : await this.runner({
          file: lookup.found.path,
          input: pythonJsonDumps(d.document),
          env,
          timeoutMs: timeoutSeconds * 1000,
          signal: this.ctx.signal,
          onSpawn,
          ...extra,
        });
    await pidSaved;
    dlog.info(
      {
        hook: shown,
        inProcess: builtin !== undefined,
        exitCode: result.exitCode,
        killedBy: result.signal,
        timedOut: result.timedOut,
        durationMs: result.durationMs,
        stdoutBytes: result.stdout.length,
        stderrBytes: result.stderr.length,
      },
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
    if (result.timedOut)
      dlog.error(
        { code: 'ERR_HOOK', hook: shown, timeoutSeconds },
        'hook timed out; process group killed; failure signalled',
      );
    else if (result.spawnError)
      dlog.error(
        { code: 'ERR_HOOK', hook: shown, reason: result.spawnError.code },
        'hook could not be started; failure signalled',
      );
    const body = bodyFromHookResult(result, shown, timeoutSeconds);
    if (!result.timedOut && !result.spawnError && Number(body.deploy_status_code) === REBOOT_EXIT_CODE) {
      return this.requestReboot(d, record, body, result.exitCode);
    }
    return this.finish(d, record, body, { exitCode: result.exitCode });
  }

  /**
   * The hook (or the config script it ran) exited 194: a reboot, unless reboots are off, the deployment has asked too
   * often or the boot id cannot be read; each of those is a failure signal carrying the hook's output. The record
   * says awaiting-reboot, durably, before the reboot command runs.
   */
  private async requestReboot(
    d: Deployment,
    record: DeploymentRecord,
    body: JsonObject,
    exitCode: number | null,
  ): Promise<DeploymentRecord> {
    const dlog = this.ctx.log.child({ deploymentId: d.id, deploymentName: d.name });
    const reboots = record.reboots ?? 0;
    const asked = `the hook asked for a reboot (status ${REBOOT_EXIT_CODE})`;
    const bootId = await readBootId(this.ctx.paths);
    let refusal: string | undefined;
    if (this.ctx.config.deploy.reboot_command.trim() === '')
      refusal = `${asked} but reboots are off ([deploy] reboot_command is empty); set reboot_command, or reboot the machine from the hook's own script`;
    else if (reboots >= MAX_REBOOTS)
      refusal = `${asked} again after ${reboots} reboots; it is not rebooted again (a hook that exits ${REBOOT_EXIT_CODE} every time would reboot the machine forever)`;
    else if (bootId === undefined)
      refusal = `${asked} but ${BOOT_ID_FILE} cannot be read, so the end of the reboot could not be told; not rebooting`;
    if (refusal !== undefined) {
      const message = refusal;
      dlog.error({ code: 'ERR_HOOK', reboots }, 'reboot refused; failure signalled');
      const stdout = typeof body.deploy_stdout === 'string' ? body.deploy_stdout : '';
      const stderr = typeof body.deploy_stderr === 'string' ? body.deploy_stderr : '';
      return this.finish(
        d,
        record,
        { ...body, ...failureBody(message, REBOOT_EXIT_CODE, stdout, stderr) },
        { exitCode },
        message,
      );
    }
    const awaiting = await this.store.transition(
      record,
      'awaiting-reboot',
      {
        exitCode,
        endedAt: this.timestamp(),
        ...(bootId !== undefined ? { bootId } : {}),
        reboots: reboots + 1,
        rebootRequestedAt: this.timestamp(),
        rebootCommandRanAt: undefined,
        hookStarts: 0,
        hookPid: undefined,
        hookPidStart: undefined,
      },
      { reboots: reboots + 1 },
    );
    return this.reboot(d, awaiting);
  }

  /** Runs [deploy] reboot_command for an awaiting-reboot record; a command that fails is a failure signal. */
  private async reboot(d: Deployment, record: DeploymentRecord): Promise<DeploymentRecord> {
    const dlog = this.ctx.log.child({ deploymentId: d.id, deploymentName: d.name });
    const command = this.ctx.config.deploy.reboot_command.trim();
    const outcome =
      command === ''
        ? {
            ok: false as const,
            reason: 'reboots were turned off ([deploy] reboot_command is empty) before the reboot happened',
          }
        : await runRebootCommand(command, this.hookEnv(), dlog);
    if (!outcome.ok) {
      const message = `the hook asked for a reboot (status ${REBOOT_EXIT_CODE}), but ${outcome.reason}`;
      dlog.error({ code: 'ERR_HOOK', reason: outcome.reason }, 'reboot failed; failure signalled');
      return this.finish(
        d,
        record,
        failureBody(message, REBOOT_EXIT_CODE),
        { exitCode: record.exitCode ?? null },
        message,
      );
    }
    this.awaitingReboot = true;
    return this.store.save({ ...record, rebootCommandRanAt: this.timestamp() });
  }

  /**
   * `deploy --rerun`: a deployment of the current metadata, whatever state it had come to (except running), is put
   * back to pending (its outcome kept in rerunHistory, an undelivered signal of the earlier run dropped) and run now;
   * its new signal is attempted once, then left to the outbox.
   */
  async rerun(id: string): Promise<DeploymentRecord> {
    await this.store.init();
    const record = await this.known(id);
    const dep = this.parse().list.find((d) => d.id === id);
    if (!dep) {
      throw new UnknownDeploymentError(
        record
          ? `deployment ${record.name} (${id}) is not in the current metadata (Heat no longer lists it), so it cannot be run again; trigger it again from Heat instead`
          : `no deployment ${id} is known here (no record, not in the current metadata); \`os-config-agent status\` lists the known ones`,
      );
    }
    const dlog = this.ctx.log.child({ deploymentId: id, deploymentName: dep.name });
    if (!record) {
      dlog.info('deployment not run here before; running it');
      return this.execute(
        dep,
        await this.store.create({ id: dep.id, name: dep.name, group: dep.group, action: dep.action }),
      );
    }
    const reruns = (record.reruns ?? 0) + 1;
    const entry: RerunEntry = {
      at: this.timestamp(),
      fromState: record.state,
      ...(record.exitCode !== undefined ? { exitCode: record.exitCode } : {}),
      ...(record.statusCode !== undefined ? { statusCode: record.statusCode } : {}),
      signal: record.signal.state,
    };
    if (record.signal.state === 'pending')
      dlog.warn(
        { attempts: record.signal.attempts },
        'undelivered signal of the earlier run dropped: the rerun signals anew',
      );
    const cleared: Partial<DeploymentRecord> = {
      reruns,
      rerunHistory: [...(record.rerunHistory ?? []), entry].slice(-RERUN_HISTORY_MAX),
      hookStarts: 0,
      signal: { state: 'none', transport: record.signal.transport, attempts: 0 },
      ...Object.fromEntries(RUN_FIELDS.map((k) => [k, undefined])),
    };
    const pending = await this.store.transition(record, 'pending', cleared, { reason: 'deploy --rerun', reruns });
    return this.execute(dep, pending);
  }

  /** `deploy --forget`: the record and the upstream files go; the next pass sees the deployment as new. */
  async forget(id: string): Promise<DeploymentRecord | undefined> {
    await this.store.init();
    const record = await this.known(id, 'forget');
    if (
      !record &&
      !(await exists(this.store.recordPath(id))) &&
      !(await this.store.hasDeployed(id)) &&
      !(await exists(this.store.notifyPath(id)))
    ) {
      throw new UnknownDeploymentError(
        `no deployment ${id} is known here (no record, no deployed file); \`os-config-agent status\` lists the known ones`,
      );
    }
    await this.store.forget(id);
    this.ctx.log.info(
      { deploymentId: id, deploymentName: record?.name ?? null, from: record?.state ?? null },
      'deployment forgotten: the next pass runs it as new if the metadata lists it',
    );
    return record;
  }

  /**
   * The record of `id` for --rerun/--forget: refused while its hook runs. A record that cannot be used is refused for
   * --rerun (its DeploymentRecordError says what to do) and is what --forget is for (`unusable`).
   */
  private async known(id: string, unusable: 'refuse' | 'forget' = 'refuse'): Promise<DeploymentRecord | undefined> {
    if (!isSafeFileName(id)) throw new UnknownDeploymentError(`${JSON.stringify(id)} is not a deployment id`);
    let record: DeploymentRecord | undefined;
    try {
      record = await this.store.read(id);
    } catch (err) {
      if (!(err instanceof DeploymentRecordError) || unusable === 'refuse') throw err;
      this.ctx.log.warn(
        { code: err.code, deploymentId: id, file: err.file, problem: err.problem },
        'deployment record cannot be used; forgetting it',
      );
      return undefined;
    }
    if (record?.state === 'running') {
      const pid = record.hookPid !== undefined ? ` (process ${record.hookPid})` : '';
      throw new DeploymentBusyError(
        `deployment ${record.name} (${id}) is running now${pid}; wait until \`os-config-agent status\` shows it finished, then try again`,
      );
    }
    return record;
  }

  /** Store the result and queue the signal (on disk), then attempt it once. */
  private async finish(
    dep: Deployment,
    record: DeploymentRecord,
    body: JsonObject,
    extra: { exitCode: number | null },
    agentError?: string,
  ): Promise<DeploymentRecord> {
    const choice = signalTargetFor(dep);
    const transport = choice.ok ? choice.target.transport : choice.transport;
    const trimmed = trimSignalBody(body, signalLimitFor(transport));
    if (trimmed.trimmed > 0)
      this.ctx.log.warn(
        {
          deploymentId: dep.id,
          deploymentName: dep.name,
          trimmedCharacters: trimmed.trimmed,
          bytes: trimmed.text.length,
        },
        'signal trimmed to fit the size limit',
      );
    const verdict = judgeSignal(trimmed.body, dep.outputs);
    await this.store.writeNotify(dep.id, trimmed.body);
    let signal: SignalRecord;
    if (!choice.ok) {
      signal = { state: 'failed', transport, attempts: 0, lastError: choice.reason };
      this.ctx.log.error(
        { deploymentId: dep.id, deploymentName: dep.name, code: 'ERR_SIGNAL', reason: choice.reason },
        'signal cannot be sent: bad signal inputs',
      );
    } else if (choice.target.transport === 'NO_SIGNAL') {
      signal = { state: 'none', transport: 'NO_SIGNAL', attempts: 0 };
    } else {
      signal = queuedSignal(choice.target, trimmed.text);
    }
    const lastError =
      agentError ?? (verdict.failed ? verdict.reason : undefined) ?? (choice.ok ? undefined : choice.reason);
    if (verdict.failed)
      this.failed.push({ id: dep.id, name: dep.name, reason: agentError ?? verdict.reason ?? 'failed' });
    let next = await this.store.transition(
      record,
      'done',
      {
        endedAt: this.timestamp(),
        exitCode: extra.exitCode,
        statusCode: verdict.statusCode,
        failed: verdict.failed,
        lastError,
        signal,
      },
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
      return this.store.transition(
        record,
        'skipped',
        {},
        {
          reason: `group ${d.group} has no hook: its config is applied as os-apply-config metadata, and it asks for no signal`,
        },
      );
    }
    return this.store.transition(
      record,
      'applied',
      {},
      {
        reason: `group ${d.group} has no hook: its config is applied as os-apply-config metadata; signalled when this cycle ends`,
      },
    );
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
    // Quiet: the pass of this cycle has already reported (and held) the records that cannot be used.
    const listed = await this.store.listAll('quiet');
    const records = new Map(listed.records.map((r) => [r.id, r]));
    const unusable = new Set(listed.unusable.map((e) => e.deploymentId));
    const signalled: string[] = [];
    for (const dep of list) {
      if (!APPLY_GROUPS.has(dep.group) || unusable.has(dep.id)) continue;
      let record = records.get(dep.id);
      if (outcome.ok) {
        if (record?.state !== 'applied') continue;
      } else {
        if (record !== undefined && record.state !== 'applied' && record.state !== 'pending') continue;
        const choice = signalTargetFor(dep);
        if (choice.ok && choice.target.transport === 'NO_SIGNAL') continue;
        // A user's own hook for the group runs (and signals) in the deployment step of a later cycle.
        if ((await findHook(dep.group, hookDirs(this.ctx.config, this.ctx.paths, this.ctx.env ?? process.env))).found)
          continue;
        if (record === undefined) {
          if (await this.store.hasDeployed(dep.id)) continue;
          record = await this.store.create({ id: dep.id, name: dep.name, group: dep.group, action: dep.action });
        }
      }
      const body = outcome.ok
        ? {
            deploy_stdout: `os-apply-config applied the data of deployment ${dep.name} and the configuration cycle completed`,
            deploy_stderr: '',
            deploy_status_code: 0,
          }
        : failureBody(
            `the configuration cycle that applies the data of deployment ${dep.name} failed: ${outcome.reason}`,
            1,
          );
      await this.finish(
        dep,
        record,
        body,
        { exitCode: null },
        outcome.ok ? undefined : `configuration cycle failed: ${outcome.reason}`,
      );
      signalled.push(dep.id);
    }
    if (signalled.length > 0)
      log.info({ deployments: signalled.length, cycleSucceeded: outcome.ok }, 'os-apply-config deployments signalled');
    return { signalled, failed: this.failed };
  }

  /**
   * The deployment left the metadata: undo what its hook keeps, then record it removed. Undefined when a shutdown cut
   * the hook's removal short: the record stays as it was, so the next pass (after the restart) removes it again
   * rather than leaving its containers behind for good.
   */
  private async markRemoved(record: DeploymentRecord): Promise<DeploymentRecord | undefined> {
    if ((await this.undoHook(record)) === 'interrupted') return undefined;
    await this.removeWorkFiles(record);
    const pending = record.signal.state === 'pending';
    const signal: SignalRecord = pending
      ? {
          state: 'cancelled',
          transport: record.signal.transport,
          attempts: record.signal.attempts,
          lastError: 'the deployment left the metadata before its signal was delivered',
        }
      : record.signal;
    return this.store.transition(
      record,
      'removed',
      { stateBeforeRemoval: record.state, removedAt: this.timestamp(), signal },
      pending ? { signalCancelled: true } : {},
    );
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
  /** A removal that fails for another reason is logged and not tried again (the tool may be gone for good). */
  private async undoHook(record: DeploymentRecord): Promise<'done' | 'interrupted'> {
    const loading = loadBuiltinHook(hookNameForGroup(record.group));
    if (!loading) return 'done';
    let failure: unknown;
    let group: string | undefined;
    try {
      const hook = await loading;
      if (!hook.removed) return 'done';
      group = hook.group;
      const killGrace = this.ctx.killGraceMs !== undefined ? { killGraceMs: this.ctx.killGraceMs } : {};
      await runRemovalInProcess({
        hook,
        id: record.id,
        env: this.hookEnv(),
        log: this.ctx.log,
        signal: this.ctx.signal,
        ...killGrace,
      });
    } catch (err) {
      failure = err;
    }
    // A hook may swallow its killed tool's failure: the shutdown, not the hook's verdict, says the removal is unfinished.
    if (this.ctx.signal.aborted) {
      this.ctx.log.info(
        { deploymentId: record.id, group },
        'hook removal interrupted by shutdown; it runs again at the next start',
      );
      return 'interrupted';
    }
    if (failure !== undefined)
      this.ctx.log.warn({ deploymentId: record.id, reason: errorMessage(failure) }, 'hook removal failed');
    else this.ctx.log.info({ deploymentId: record.id, group }, 'hook removal done');
    return 'done';
  }

  /** A deployment left the metadata: the work files its built-in hook kept go (upstream kept them forever). */
  private async removeWorkFiles(record: DeploymentRecord): Promise<void> {
    try {
      const files = await removeWorkFiles(hookNameForGroup(record.group), record.id, this.hookEnv());
      if (files.length > 0)
        this.ctx.log.debug(
          { deploymentId: record.id, files: files.map((f) => this.ctx.paths.unmap(f)) },
          'hook work files removed',
        );
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
