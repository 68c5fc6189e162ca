import type { Deployment } from '../heat/deployment.js';
import { judgeSignal, signalLimitFor, trimSignalBody } from '../heat/signal-body.js';
import { signalTargetFor } from '../heat/signal-target.js';
import { attemptSignal, queuedSignal } from '../signals/outbox.js';
import type { TransitionEvent } from '../state/machine.js';
import type { DeploymentRecord, RecordPatch, SignalRecord } from '../state/store.js';
import type { JsonObject } from '../util/json-merge.js';
import type { DeployContext, DeployDeps } from './context.js';
import { step, type Effect, type Step } from './effects.js';

// The end of one deployment's run, however it ended: the signal body goes to deployed/<id>.notify.json, the result
// and the signal (queued, or why it cannot be sent) into the record, `done`, durably; then the signal is attempted
// once, and left to the outbox if Heat cannot be reached.

/** The events that store a result (machine.ts: each leads to done). */
export type ResultEvent = Extract<
  TransitionEvent,
  'hook-finished' | 'hook-failed-to-run' | 'interrupted-too-often' | 'reboot-failed' | 'cycle-ended'
>;

export interface RunResult {
  /** The signal body (deploy_stdout, deploy_stderr, deploy_status_code, outputs). */
  readonly body: JsonObject;
  readonly exitCode: number | null;
  /** The agent's own reason for a failure (no hook, interrupted too often, the cycle failed). */
  readonly agentError?: string;
}

/** Store the result and queue the signal (on disk), then attempt it once. */
export async function finish(
  deps: DeployDeps,
  dep: Deployment,
  record: DeploymentRecord,
  event: ResultEvent,
  result: RunResult,
): Promise<Step> {
  const { store } = deps;
  const stored = resultWrites(deps, dep, result);
  await store.writeNotify(dep.id, stored.body);
  const done = await store.transition(record, event, stored.patch, stored.logFields);
  return attemptStored(deps, done, stored.effects);
}

/** What storing a result writes: the notify file's body, the record's patch and log fields, and its effects. */
export interface ResultWrites {
  readonly body: JsonObject;
  readonly patch: RecordPatch;
  readonly logFields: Record<string, unknown>;
  readonly effects: readonly Effect[];
}

/** The writes of a result (logging a signal that cannot be sent); finish() makes them, or a batch of results does. */
export function resultWrites(deps: DeployDeps, dep: Deployment, result: RunResult): ResultWrites {
  const prepared = prepareSignal(deps.ctx, dep, result.body);
  const verdict = judgeSignal(prepared.body, dep.outputs);
  if (prepared.problem !== undefined)
    deps.ctx.log.error(
      { deploymentId: dep.id, deploymentName: dep.name, code: 'ERR_SIGNAL', reason: prepared.problem },
      'signal cannot be sent: bad signal inputs',
    );
  const { agentError } = result;
  const lastError = agentError ?? (verdict.failed ? verdict.reason : undefined) ?? prepared.problem;
  // A result Heat can never be told of (an empty deploy_resource_name, a signal URL that is not http) fails the
  // deployment: counted as done, Heat would wait for it until its timeout while the pass and status say all is well.
  const failed = verdict.failed || prepared.problem !== undefined;
  const effects: Effect[] = failed
    ? [{ kind: 'failed', failure: { id: dep.id, name: dep.name, reason: lastError ?? 'failed' } }]
    : [];
  return {
    body: prepared.body,
    patch: {
      endedAt: deps.store.timestamp(),
      exitCode: result.exitCode,
      statusCode: verdict.statusCode,
      failed,
      lastError,
      signal: prepared.signal,
    },
    logFields: {
      exitCode: result.exitCode,
      failed,
      ...(verdict.reason ? { reason: verdict.reason } : {}),
    },
    effects,
  };
}

/** A stored result's signal attempted once, when it is pending (only once the `done` record is on disk). */
export async function attemptStored(
  deps: DeployDeps,
  done: DeploymentRecord,
  effects: readonly Effect[],
): Promise<Step> {
  if (done.signal.state !== 'pending') return step(done, ...effects);
  return step(await attemptSignal(done, deps.outbox), ...effects, { kind: 'signal-attempted', id: done.id });
}

interface PreparedSignal {
  /** The body as signalled (trimmed to the transport's limit). */
  readonly body: JsonObject;
  readonly signal: SignalRecord;
  /** Why the signal cannot be sent (bad signal inputs). */
  readonly problem?: string;
}

/** The signal of a result: trimmed to fit, and queued to its target, or failed when the inputs name none usable. */
function prepareSignal(ctx: DeployContext, dep: Deployment, body: JsonObject): PreparedSignal {
  const choice = signalTargetFor(dep);
  const transport = choice.ok ? choice.target.transport : choice.transport;
  const trimmed = trimSignalBody(body, signalLimitFor(transport));
  if (trimmed.trimmed > 0)
    ctx.log.warn(
      {
        deploymentId: dep.id,
        deploymentName: dep.name,
        trimmedCharacters: trimmed.trimmed,
        bytes: trimmed.text.length,
      },
      'signal trimmed to fit the size limit',
    );
  if (!choice.ok) {
    return {
      body: trimmed.body,
      signal: { state: 'failed', transport, attempts: 0, lastError: choice.reason },
      problem: choice.reason,
    };
  }
  if (choice.target.transport === 'NO_SIGNAL')
    return { body: trimmed.body, signal: { state: 'none', transport: 'NO_SIGNAL', attempts: 0 } };
  return { body: trimmed.body, signal: queuedSignal(choice.target, trimmed.text) };
}
