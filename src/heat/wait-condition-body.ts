import { AgentError } from '../errors.js';
import { isJsonObject, type JsonObject } from '../util/json-merge.js';
import { pythonJsonDumps } from '../util/python-json.js';
import { SIGNAL_LIMIT_BYTES } from './signal-body.js';

// The body of a wait condition signal, as heat-cfntools' cfn-signal builds it (CFN form, PUT to the pre-signed
// WaitConditionHandle URL) or as Heat's OS::Heat::WaitConditionHandle takes it (native form, POST with a token, the
// `wc_notify` curl command). Heat checks both strictly: the CFN handle wants exactly Status, Reason, UniqueId and Data;
// the native handle at most status, reason, data and id; and Status/status must be SUCCESS or FAILURE. A body Heat
// would refuse is refused here, before it is queued.

const WAIT_CONDITION_STATUSES = ['SUCCESS', 'FAILURE'] as const;
export type WaitConditionStatus = (typeof WAIT_CONDITION_STATUSES)[number];

/** cfn-signal's defaults for -r and -d. */
export const DEFAULT_REASON = 'Configuration Complete';
export const DEFAULT_DATA = 'Application has completed configuration.';

const NATIVE_KEYS = ['status', 'reason', 'data', 'id'];

/** A signal the command line asked for that Heat would refuse, or that cannot be sent at all: nothing is queued. */
export class SignalInputError extends AgentError {
  override name = 'SignalInputError';
  constructor(message: string) {
    super('ERR_SIGNAL', message);
  }
}

export interface StatusFlags {
  /** -s/--success: "true" is success, anything else failure. */
  readonly success?: string;
  /** -e/--exit-code (or the deprecated --exit): when given and non-empty, "0" is success, anything else failure. */
  readonly exitCode?: string;
}

/** cfn-signal's rule: a non-empty exit code decides (only "0" succeeds); otherwise -s must be exactly "true". */
export function statusFrom(flags: StatusFlags): WaitConditionStatus {
  if (flags.exitCode !== undefined && flags.exitCode !== '') return flags.exitCode === '0' ? 'SUCCESS' : 'FAILURE';
  return (flags.success ?? 'true') === 'true' ? 'SUCCESS' : 'FAILURE';
}

export interface WaitConditionFields {
  readonly status: WaitConditionStatus;
  readonly reason: string;
  readonly data: string;
  readonly uniqueId: string;
}

/** The CFN body, key order and separators as cfn-signal's json.dumps writes them. */
export function cfnBody(f: WaitConditionFields): string {
  return checkSize(pythonJsonDumps({ Status: f.status, Reason: f.reason, UniqueId: f.uniqueId, Data: f.data }));
}

/** The native body built from the same flags. */
export function nativeBody(f: WaitConditionFields): string {
  return checkSize(pythonJsonDumps({ status: f.status, reason: f.reason, data: f.data, id: f.uniqueId }));
}

/**
 * A native body given whole (what follows `--data-binary` in a wc_notify command, or what is PUT to the handle's
 * pre-signed URL): a JSON object with only the keys
 * Heat accepts and a valid status when one is given (Heat's default is SUCCESS).
 */
export function nativeBodyFromJson(text: string): string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new SignalInputError(
      `--body is not JSON (${(err as Error).message}); give a JSON object such as '{"status": "SUCCESS", "reason": "done"}'`,
    );
  }
  if (!isJsonObject(value))
    throw new SignalInputError('--body must be a JSON object such as \'{"status": "SUCCESS"}\'');
  const extra = Object.keys(value).filter((k) => !NATIVE_KEYS.includes(k));
  if (extra.length > 0)
    throw new SignalInputError(
      `--body has key(s) Heat refuses: ${extra.slice(0, 5).join(', ')}; only ${NATIVE_KEYS.join(', ')} are allowed`,
    );
  const status = (value as JsonObject).status;
  if (status !== undefined && !(WAIT_CONDITION_STATUSES as readonly unknown[]).includes(status)) {
    throw new SignalInputError('--body\'s "status" must be "SUCCESS" or "FAILURE"');
  }
  return checkSize(pythonJsonDumps(value));
}

function checkSize(text: string): string {
  if (text.length > SIGNAL_LIMIT_BYTES) {
    throw new SignalInputError(
      `the signal body is ${text.length} bytes, over the ${SIGNAL_LIMIT_BYTES}-byte limit (Heat refuses bodies over 1 MiB); send less data`,
    );
  }
  return text;
}
