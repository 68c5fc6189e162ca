import { fieldsProblem, isBoolean, isCount, isNumber, isString, type Fields } from '../../state/record.js';
import type { SignalState } from '../../state/signal-machine.js';
import { parseStateObject } from '../../state/state-file.js';
import type { WaitConditionTarget } from '../transports/transport.js';

// One wait condition signal queued by `os-config-agent cfn-signal`, as its file holds it: where it goes (the URL is a
// credential: a pre-signed URL or a token), the body, and its attempts. Once settled, the URL, token and body are
// dropped, so a settled file holds nothing secret.

export type QueuedSignalKind = 'cfn' | 'native';
export type QueuedSignalState = Extract<SignalState, 'pending' | 'sent' | 'failed'>;

export interface QueuedSignal {
  readonly version: 1;
  readonly id: string;
  /** cfn: PUT to the pre-signed URL, as cfn-signal. native: POST with X-Auth-Token, as Heat's wc_notify command. */
  readonly kind: QueuedSignalKind;
  readonly state: QueuedSignalState;
  /** The URL for logs and status (signatures replaced). */
  readonly shownUrl: string;
  readonly createdAt: string;
  readonly updatedAt: string;
  /** While pending only. */
  readonly url?: string;
  readonly token?: string;
  readonly text?: string;
  readonly insecure?: boolean;
  readonly attempts: number;
  readonly nextAttemptAt?: string;
  readonly lastAttemptAt?: string;
  readonly lastStatus?: number;
  readonly lastError?: string;
  readonly sentAt?: string;
}

export interface NewSignal {
  readonly kind: QueuedSignalKind;
  readonly url: string;
  readonly text: string;
  readonly token?: string;
  readonly insecure?: boolean;
}

/** Where a pending entry's signal goes; undefined when its file lacks the URL (or a native one its token). */
export function targetOf(entry: QueuedSignal): WaitConditionTarget | undefined {
  if (entry.url === undefined) return undefined;
  const insecure = entry.insecure ? { insecure: true } : {};
  if (entry.kind === 'cfn') return { transport: 'WAIT_CONDITION_URL', url: entry.url, ...insecure };
  if (!entry.token) return undefined;
  return { transport: 'WAIT_CONDITION_TOKEN', url: entry.url, token: entry.token, ...insecure };
}

export function isDueSignal(entry: QueuedSignal, now: number): boolean {
  return entry.state === 'pending' && (entry.nextAttemptAt === undefined || Date.parse(entry.nextAttemptAt) <= now);
}

/** What a settled file keeps: no URL, token or body. */
export function settled(entry: QueuedSignal, patch: Partial<QueuedSignal>): QueuedSignal {
  const { url: _url, token: _token, text: _text, nextAttemptAt: _next, ...rest } = entry;
  return { ...rest, ...patch };
}

let sequence = 0;

/** A sortable, file-safe id: creation time first, so the queue is sent oldest first. */
export function newSignalId(now: number): string {
  sequence = (sequence + 1) % 1000;
  const stamp = new Date(now).toISOString().replace(/[-:.]/g, '');
  return `${stamp}-${process.pid}-${String(sequence).padStart(3, '0')}-${Math.floor(Math.random() * 0x10000)
    .toString(16)
    .padStart(4, '0')}`;
}

// Checked field by field (as deployment records), so a damaged file is set aside instead of being cast.
const ENTRY_FIELDS: Fields = {
  kind: [(v) => v === 'cfn' || v === 'native', 'cfn or native', true],
  state: [(v) => v === 'pending' || v === 'sent' || v === 'failed', 'pending, sent or failed', true],
  shownUrl: [isString, 'a string', true],
  createdAt: [isString, 'a time', true],
  updatedAt: [isString, 'a time', true],
  attempts: [isCount, 'a count', true],
  url: [isString, 'a string', false],
  token: [isString, 'a string', false],
  text: [isString, 'a string', false],
  insecure: [isBoolean, 'true or false', false],
  nextAttemptAt: [isString, 'a time', false],
  lastAttemptAt: [isString, 'a time', false],
  lastStatus: [isNumber, 'a number', false],
  lastError: [isString, 'a string', false],
  sentAt: [isString, 'a time', false],
};

/** A file's text as a queued signal, or undefined when it is not one. */
export function parseEntry(text: string, id: string): QueuedSignal | undefined {
  const value = parseStateObject(text, id);
  if (!value || fieldsProblem(value, ENTRY_FIELDS) !== undefined) return undefined;
  return value as unknown as QueuedSignal;
}
