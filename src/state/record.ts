import { isJsonObject, type JsonObject } from '../util/json-merge.js';
import { DEPLOYMENT_STATES, isDeploymentState, type DeploymentState } from './states.js';
import { isSignalState, SIGNAL_STATES, type SignalState } from './signal-machine.js';
import type { SignalTarget, Transport } from '../heat/signal-target.js';
import { RECONVERGE_OUTCOMES, type ReconvergeRecord } from './reconverge-record.js';

// The shape of a deployment record (<state_dir>/deployments/<id>.json) and its check on read. Every field is checked
// for its type, so a record damaged on disk, edited by hand or written by another version of the agent is reported
// as what it is (checkDeploymentRecord says which field is wrong) instead of being cast and failing somewhere later.
// Records of earlier releases are version 1 too: the fields added since are optional, so they read as they are.

export const RECORD_VERSION = 1;

export type { SignalState } from './signal-machine.js';
export {
  RECONVERGE_OUTCOMES,
  type ReconvergeOutcome,
  type ReconvergeRecord,
  type ReconvergeResult,
} from './reconverge-record.js';
const TRANSPORTS: readonly Transport[] = ['CFN_SIGNAL', 'TEMP_URL_SIGNAL', 'HEAT_SIGNAL', 'ZAQAR_SIGNAL', 'NO_SIGNAL'];

export interface SignalRecord {
  readonly state: SignalState;
  readonly transport: Transport;
  readonly attempts: number;
  /** While pending: where to send, and what (the trimmed JSON text). Dropped once settled. */
  readonly target?: SignalTarget;
  readonly text?: string;
  readonly nextAttemptAt?: string;
  readonly lastAttemptAt?: string;
  readonly sentAt?: string;
  readonly lastStatus?: number;
  readonly lastError?: string;
  /** The last few delivery attempts, oldest first (at most SIGNAL_HISTORY_MAX; records before issue 20 have none). */
  readonly history?: readonly SignalAttempt[];
}

/** What a deployment had come to when it was put back to pending by `deploy --rerun`. */
export interface RerunEntry {
  readonly at: string;
  readonly fromState: DeploymentState;
  readonly exitCode?: number | null;
  readonly statusCode?: string;
  readonly signal: SignalState;
}

/** Entries of rerunHistory kept (the oldest go first); `reruns` keeps the full count. */
export const RERUN_HISTORY_MAX = 10;

export interface SignalAttempt {
  readonly at: string;
  /** sent; retry: will be tried again; failed: settled as failed. */
  readonly outcome: 'sent' | 'retry' | 'failed';
  readonly status?: number;
  readonly error?: string;
}
const ATTEMPT_OUTCOMES: readonly SignalAttempt['outcome'][] = ['sent', 'retry', 'failed'];

export const SIGNAL_HISTORY_MAX = 8;

export interface DeploymentRecord {
  readonly version: typeof RECORD_VERSION;
  readonly id: string;
  readonly name: string;
  readonly group: string;
  readonly action: string;
  readonly state: DeploymentState;
  /** For removed records: the state before removal. */
  readonly stateBeforeRemoval?: DeploymentState;
  /** Hook path as the instance sees it. */
  readonly hook?: string;
  readonly hookStarts: number;
  /** While running: the hook's pid (its process-group id) and start time, to end an orphan after a crash. */
  readonly hookPid?: number;
  readonly hookPidStart?: string;
  readonly firstSeenAt: string;
  readonly updatedAt: string;
  readonly startedAt?: string;
  readonly endedAt?: string;
  readonly exitCode?: number | null;
  /** deploy_status_code of the signal, as text. */
  readonly statusCode?: string;
  /** As Heat will judge the signal. */
  readonly failed?: boolean;
  readonly lastError?: string;
  readonly removedAt?: string;
  /** Found already deployed by an earlier agent (deployed/<id>.json existed): never run here. */
  readonly adopted?: boolean;
  /** Times `deploy --rerun` put it back to pending, and the newest of those runs' outcomes. */
  readonly reruns?: number;
  readonly rerunHistory?: readonly RerunEntry[];
  /** Reboots this deployment asked for (exit 194) and the agent started. */
  readonly reboots?: number;
  /** While awaiting-reboot: the boot id when the reboot was asked, and when the reboot command returned. */
  readonly bootId?: string;
  readonly rebootRequestedAt?: string;
  readonly rebootCommandRanAt?: string;
  /** Re-runs on a reconverge interval, and the last one's outcome (never signalled). */
  readonly reconverge?: ReconvergeRecord;
  readonly signal: SignalRecord;
}

export type RecordCheck =
  { readonly ok: true; readonly record: DeploymentRecord } | { readonly ok: false; readonly problem: string };

/** A record file's text checked field by field; `problem` names the first field that is wrong, and how. */
export function checkDeploymentRecord(text: string, id: string): RecordCheck {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, problem: 'it is not JSON (cut short or overwritten)' };
  }
  if (!isJsonObject(value)) return { ok: false, problem: 'it is not a JSON object' };
  if (value.version !== RECORD_VERSION) {
    return {
      ok: false,
      problem: `it has version ${JSON.stringify(value.version ?? null)}, and this agent reads version ${RECORD_VERSION} (written by another release of the agent)`,
    };
  }
  if (value.id !== id)
    return {
      ok: false,
      problem: `its id is ${JSON.stringify(value.id ?? null)}, not the ${JSON.stringify(id)} of its file name`,
    };
  const problem = recordProblem(value) ?? signalProblem(value.signal) ?? reconvergeProblem(value.reconverge);
  return problem === undefined ? { ok: true, record: value as unknown as DeploymentRecord } : { ok: false, problem };
}

export type Check = (v: unknown) => boolean;
export const isString: Check = (v) => typeof v === 'string';
export const isCount: Check = (v) => typeof v === 'number' && Number.isInteger(v) && v >= 0;
export const isBoolean: Check = (v) => typeof v === 'boolean';
export const isNumber: Check = (v) => typeof v === 'number' && Number.isFinite(v);

/** Field name -> [check, what it should be, required]. */
export type Fields = Readonly<Record<string, readonly [Check, string, boolean]>>;

const RECORD_FIELDS: Fields = {
  name: [isString, 'a string', true],
  group: [isString, 'a string', true],
  action: [isString, 'a string', true],
  state: [isDeploymentState, 'a deployment state', true],
  hookStarts: [isCount, 'a count', true],
  firstSeenAt: [isString, 'a time', true],
  updatedAt: [isString, 'a time', true],
  signal: [isJsonObject, 'an object', true],
  stateBeforeRemoval: [isDeploymentState, 'a deployment state', false],
  hook: [isString, 'a string', false],
  hookPid: [(v) => isCount(v) && (v as number) > 0, 'a process id', false],
  hookPidStart: [isString, 'a string', false],
  startedAt: [isString, 'a time', false],
  endedAt: [isString, 'a time', false],
  exitCode: [(v) => v === null || isNumber(v), 'a number or null', false],
  statusCode: [isString, 'a string', false],
  failed: [isBoolean, 'true or false', false],
  lastError: [isString, 'a string', false],
  removedAt: [isString, 'a time', false],
  adopted: [isBoolean, 'true or false', false],
  reruns: [isCount, 'a count', false],
  rerunHistory: [(v) => Array.isArray(v) && v.every(isRerunEntry), 'a list of rerun entries', false],
  reboots: [isCount, 'a count', false],
  bootId: [isString, 'a string', false],
  rebootRequestedAt: [isString, 'a time', false],
  rebootCommandRanAt: [isString, 'a time', false],
  reconverge: [isJsonObject, 'an object', false],
};

const RECONVERGE_FIELDS: Fields = {
  runs: [isCount, 'a count', true],
  from: [isDeploymentState, 'a deployment state', false],
  startedAt: [isString, 'a time', false],
  endedAt: [isString, 'a time', false],
  last: [isJsonObject, 'an object', false],
};

const RECONVERGE_RESULT_FIELDS: Fields = {
  outcome: [(v) => (RECONVERGE_OUTCOMES as readonly unknown[]).includes(v), RECONVERGE_OUTCOMES.join(', '), true],
  startedAt: [isString, 'a time', true],
  endedAt: [isString, 'a time', true],
  exitCode: [(v) => v === null || isNumber(v), 'a number or null', false],
  statusCode: [isString, 'a string', false],
  changes: [isCount, 'a count', false],
  reason: [isString, 'a string', false],
};

const SIGNAL_FIELDS: Fields = {
  state: [isSignalState, `one of ${SIGNAL_STATES.join(', ')}`, true],
  transport: [(v) => (TRANSPORTS as readonly unknown[]).includes(v), `one of ${TRANSPORTS.join(', ')}`, true],
  attempts: [isCount, 'a count', true],
  target: [isJsonObject, 'an object', false],
  text: [isString, 'a string', false],
  nextAttemptAt: [isString, 'a time', false],
  lastAttemptAt: [isString, 'a time', false],
  sentAt: [isString, 'a time', false],
  lastStatus: [isNumber, 'a number', false],
  lastError: [isString, 'a string', false],
  history: [(v) => Array.isArray(v) && v.every(isAttempt), 'a list of signal attempts', false],
};

/** The first field of `value` that `fields` does not accept, as a sentence naming it (never its value). */
export function fieldsProblem(value: JsonObject, fields: Fields, prefix = ''): string | undefined {
  for (const [name, [check, what, required]] of Object.entries(fields)) {
    const v = value[name];
    if (v === undefined) {
      if (required) return `field ${prefix}${name} is missing`;
      continue;
    }
    // The kind of value only, never the value: a record holds signed URLs and passwords.
    if (!check(v)) return `field ${prefix}${name} should be ${what}, not ${kindOf(v)}`;
  }
  return undefined;
}

function kindOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'string') return KNOWN_WORDS.has(v) ? JSON.stringify(v) : 'a string';
  if (typeof v === 'number') return Number.isInteger(v) ? `the number ${v}` : 'a fraction';
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

// Strings are shown only when they are the agent's own words (a signal state where a deployment state belongs): any
// other string could be a secret.
const KNOWN_WORDS = new Set<string>([
  ...DEPLOYMENT_STATES,
  ...SIGNAL_STATES,
  ...TRANSPORTS,
  ...ATTEMPT_OUTCOMES,
  ...RECONVERGE_OUTCOMES,
]);

function recordProblem(value: JsonObject): string | undefined {
  return fieldsProblem(value, RECORD_FIELDS, '');
}

function signalProblem(signal: unknown): string | undefined {
  const s = signal as JsonObject;
  const problem = fieldsProblem(s, SIGNAL_FIELDS, 'signal.');
  if (problem !== undefined) return problem;
  return s.target === undefined ? undefined : targetProblem(s.target as JsonObject, s.transport as Transport);
}

function reconvergeProblem(reconverge: unknown): string | undefined {
  if (reconverge === undefined) return undefined;
  const r = reconverge as JsonObject;
  const problem = fieldsProblem(r, RECONVERGE_FIELDS, 'reconverge.');
  if (problem !== undefined || r.last === undefined) return problem;
  return fieldsProblem(r.last as JsonObject, RECONVERGE_RESULT_FIELDS, 'reconverge.last.');
}

// The fields each transport's delivery reads; the rest (region) is optional.
const TARGET_FIELDS: Readonly<Record<Transport, readonly string[]>> = {
  CFN_SIGNAL: ['url', 'verb'],
  TEMP_URL_SIGNAL: ['url', 'verb'],
  HEAT_SIGNAL: ['stackId', 'resourceName', 'authUrl', 'userId', 'password', 'projectId'],
  ZAQAR_SIGNAL: ['queueId', 'authUrl', 'userId', 'password', 'projectId'],
  NO_SIGNAL: [],
};

function targetProblem(target: JsonObject, transport: Transport): string | undefined {
  if (target.transport !== transport)
    return `field signal.target.transport is ${JSON.stringify(target.transport ?? null)}, not the signal's ${transport}`;
  // Names only: the values hold signed URLs and passwords.
  const missing = TARGET_FIELDS[transport].find((name) => typeof target[name] !== 'string');
  return missing === undefined ? undefined : `field signal.target.${missing} should be a string`;
}

function isRerunEntry(v: unknown): boolean {
  if (!isJsonObject(v)) return false;
  return (
    isString(v.at) &&
    isDeploymentState(v.fromState) &&
    isSignalState(v.signal) &&
    (v.exitCode === undefined || v.exitCode === null || isNumber(v.exitCode)) &&
    (v.statusCode === undefined || isString(v.statusCode))
  );
}

function isAttempt(v: unknown): boolean {
  if (!isJsonObject(v)) return false;
  return (
    isString(v.at) &&
    (ATTEMPT_OUTCOMES as readonly unknown[]).includes(v.outcome) &&
    (v.status === undefined || isNumber(v.status)) &&
    (v.error === undefined || isString(v.error))
  );
}
