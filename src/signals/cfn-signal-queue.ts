import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { AgentConfig } from '../config/options.js';
import { errorMessage } from '../errors.js';
import type { HttpClient } from '../http/types.js';
import type { Logger } from '../log/logger.js';
import { redactUrl, releaseSecrets, setSecrets } from '../log/redact.js';
import { writeFileAtomic } from '../util/atomic-write.js';
import { isSafeFileName } from '../util/safe-name.js';
import { DeployLockedError, stateError } from '../state/errors.js';
import { fieldsProblem, isBoolean, isCount, isNumber, isString, type Fields } from '../state/record.js';
import { parseStateObject, readStateFile } from '../state/store.js';
import { withDeployLock } from '../state/deploy-lock.js';
import { signalRetryDelayMs } from './backoff.js';
import { ensureQueueDir, signalQueueDir, signalQueueLockFile } from '../state/signal-queue-paths.js';
import { sendOnce, type Delivery } from './transports/delivery.js';
import type { FlushReport } from './outbox.js';

// Wait condition signals queued by `os-config-agent cfn-signal`: one file per signal, <state_dir>/signals/<id>.json,
// 0600 in a 0700 directory (the URL is a credential: a pre-signed URL or a token), written atomically. They are not
// deployments, so they live apart from the deployment records and have a lock of their own (signals.lock): a hook
// that runs for an hour under the deployment lock must not hold up a signal, least of all one its own script queued.
//
//   pending -> sent | failed
//
// Whoever holds the lock may attempt a due signal: the daemon (woken when a file appears), or the command itself
// (--now, --wait, or when no daemon runs). Each attempt re-reads the file under the lock and writes its outcome before
// the lock is released, so a signal is sent once. The one window for a repeat is a crash after Heat accepted it and
// before the file says so; Heat stores a wait condition signal under its UniqueId/id, so the repeat overwrites
// itself. Once settled, the URL, token and body are dropped from the file; settled files go after [deploy]
// prune_after days.

export type QueuedSignalKind = 'cfn' | 'native';
export type QueuedSignalState = 'pending' | 'sent' | 'failed';

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

export interface QueueDeps {
  readonly dir: string;
  readonly lockFile: string;
  readonly http: HttpClient;
  readonly log: Logger;
  readonly timeoutSeconds: number;
  readonly maxBackoffSeconds: number;
  readonly maxAttempts: number;
  readonly pruneAfterDays: number;
  readonly now: () => number;
  readonly random: () => number;
  readonly signal?: AbortSignal;
}

/** What a flush of the queue did: the outbox's report, for the queue's files. */
export type QueueFlushReport = FlushReport;

const FILE_MODE = 0o600;
const DAY_MS = 86_400_000;

/** The queue's dependencies from the configuration ([deploy] signal_* settings apply to these signals too). */
export function queueDepsFor(
  config: AgentConfig,
  http: HttpClient,
  log: Logger,
  options: { now?: () => number; random?: () => number; signal?: AbortSignal } = {},
): QueueDeps {
  return {
    dir: signalQueueDir(config),
    lockFile: signalQueueLockFile(config),
    http,
    log,
    timeoutSeconds: config.deploy.signal_timeout,
    maxBackoffSeconds: config.deploy.signal_max_backoff,
    maxAttempts: Math.max(1, config.deploy.signal_max_attempts),
    pruneAfterDays: config.deploy.prune_after,
    now: options.now ?? Date.now,
    random: options.random ?? Math.random,
    ...(options.signal ? { signal: options.signal } : {}),
  };
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

/** Put a signal on disk, pending; it is durable when this returns. */
export async function enqueueSignal(dir: string, signal: NewSignal, now: number): Promise<QueuedSignal> {
  await ensureQueueDir(dir);
  const at = new Date(now).toISOString();
  const entry: QueuedSignal = {
    version: 1,
    id: newSignalId(now),
    kind: signal.kind,
    state: 'pending',
    shownUrl: redactUrl(signal.url),
    createdAt: at,
    updatedAt: at,
    url: signal.url,
    ...(signal.token !== undefined ? { token: signal.token } : {}),
    text: signal.text,
    ...(signal.insecure ? { insecure: true } : {}),
    attempts: 0,
  };
  await save(dir, entry);
  return entry;
}

function filePath(dir: string, id: string): string {
  return path.join(dir, `${id}.json`);
}

async function save(dir: string, entry: QueuedSignal): Promise<QueuedSignal> {
  const file = filePath(dir, entry.id);
  try {
    await writeFileAtomic(file, `${JSON.stringify(entry, null, 2)}\n`, { mode: FILE_MODE });
  } catch (err) {
    throw stateError('write', file, err);
  }
  return entry;
}

/** A queued signal, or undefined when absent or unreadable as one. */
export async function readQueuedSignal(dir: string, id: string): Promise<QueuedSignal | undefined> {
  const text = await readStateFile(filePath(dir, id));
  if (text === undefined) return undefined;
  const entry = parseEntry(text, id);
  // Scrubbed while its file exists (released when it is pruned), not for the life of the process.
  if (entry?.token !== undefined) setSecrets(tokenOwner(id), [entry.token]);
  return entry;
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

function parseEntry(text: string, id: string): QueuedSignal | undefined {
  const value = parseStateObject(text, id);
  if (!value || fieldsProblem(value, ENTRY_FIELDS) !== undefined) return undefined;
  return value as unknown as QueuedSignal;
}

/** The ids of the queued signal files in `dir`, sorted; none when the directory does not exist. */
export async function listQueuedSignalIds(dir: string): Promise<string[]> {
  let names: string[];
  try {
    names = await fs.readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw stateError('list', dir, err);
  }
  return names
    .filter((n) => n.endsWith('.json') && !n.startsWith('.'))
    .map((n) => n.slice(0, -'.json'.length))
    .filter((id) => isSafeFileName(id))
    .sort();
}

export function isDueSignal(entry: QueuedSignal, now: number): boolean {
  return entry.state === 'pending' && (entry.nextAttemptAt === undefined || Date.parse(entry.nextAttemptAt) <= now);
}

function deliver(entry: QueuedSignal, deps: QueueDeps, log: Logger): Promise<Delivery> {
  const native = entry.kind === 'native';
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (native) {
    headers.accept = 'application/json';
    headers['x-auth-token'] = entry.token ?? '';
  }
  return sendOnce(
    {
      http: deps.http,
      log,
      timeoutSeconds: deps.timeoutSeconds,
      now: deps.now,
      ...(deps.signal ? { signal: deps.signal } : {}),
    },
    {
      url: entry.url ?? '',
      method: native ? 'POST' : 'PUT',
      headers,
      body: entry.text ?? '',
      ...(entry.insecure ? { insecure: true } : {}),
    },
    native ? 'wait condition signal' : 'CFN wait condition signal',
  );
}

/** What a settled file keeps: no URL, token or body. */
function settled(entry: QueuedSignal, patch: Partial<QueuedSignal>): QueuedSignal {
  const { url: _url, token: _token, text: _text, nextAttemptAt: _next, ...rest } = entry;
  return { ...rest, ...patch };
}

/** One attempt of a pending signal (the caller holds the lock); the outcome is on disk when this returns. */
export async function attemptQueuedSignal(entry: QueuedSignal, deps: QueueDeps): Promise<QueuedSignal> {
  const log = deps.log.child({ signalId: entry.id });
  const at = new Date(deps.now()).toISOString();
  const attempts = entry.attempts + 1;
  if (entry.url === undefined || entry.text === undefined || (entry.kind === 'native' && !entry.token)) {
    const lastError = 'the queued signal has no URL, body or token in its file; it cannot be sent';
    log.error({ code: 'ERR_SIGNAL', destination: entry.shownUrl }, 'queued signal cannot be sent');
    return save(deps.dir, settled(entry, { state: 'failed', attempts, lastAttemptAt: at, updatedAt: at, lastError }));
  }
  const delivery = await deliver(entry, deps, log);
  // A shutdown during the attempt says nothing about Heat: not counted.
  if (delivery.outcome === 'retry' && deps.signal?.aborted) return entry;
  const base = {
    attempts,
    lastAttemptAt: at,
    updatedAt: at,
    ...(delivery.status !== undefined ? { lastStatus: delivery.status } : {}),
  };
  if (delivery.outcome === 'sent') {
    const next = await save(deps.dir, settled(entry, { ...base, state: 'sent', sentAt: at, lastError: undefined }));
    log.info(
      { kind: entry.kind, destination: entry.shownUrl, httpStatus: delivery.status, attempts },
      'queued signal sent',
    );
    return next;
  }
  if (delivery.outcome === 'final' || attempts >= deps.maxAttempts) {
    const lastError =
      delivery.outcome === 'final'
        ? `${delivery.error}; the answer is final, not retried`
        : `${delivery.error}; gave up after ${attempts} attempts`;
    const next = await save(deps.dir, settled(entry, { ...base, state: 'failed', lastError }));
    log.error(
      {
        code: 'ERR_SIGNAL',
        kind: entry.kind,
        destination: entry.shownUrl,
        httpStatus: delivery.status,
        attempts,
        reason: lastError,
      },
      'queued signal failed; not retried',
    );
    return next;
  }
  const delayMs = signalRetryDelayMs(
    attempts,
    deps.maxBackoffSeconds * 1000,
    deps.random(),
    delivery.retryAfterSeconds,
  );
  const nextAttemptAt = new Date(deps.now() + delayMs).toISOString();
  const next = await save(deps.dir, { ...entry, ...base, nextAttemptAt, lastError: delivery.error });
  log.warn(
    {
      code: 'ERR_SIGNAL',
      kind: entry.kind,
      destination: entry.shownUrl,
      httpStatus: delivery.status,
      attempts,
      delayMs,
      reason: delivery.error,
    },
    'queued signal attempt failed; will retry',
  );
  return next;
}

/** Run `fn` under the queue lock; undefined when another process holds it. */
async function underLock<T>(deps: QueueDeps, fn: () => Promise<T>): Promise<T | undefined> {
  try {
    return await withDeployLock(deps.lockFile, fn);
  } catch (err) {
    if (err instanceof DeployLockedError) return undefined;
    throw err;
  }
}

/**
 * Attempt one queued signal if it is due, under the lock (the command's --now and --wait). Returns the signal as it
 * is afterwards; when another process holds the lock, as it is on disk (that process is attempting it).
 */
export async function attemptIfDue(deps: QueueDeps, id: string): Promise<QueuedSignal | undefined> {
  const done = await underLock(deps, async () => {
    const entry = await readQueuedSignal(deps.dir, id);
    if (!entry || !isDueSignal(entry, deps.now())) return entry;
    return attemptQueuedSignal(entry, deps);
  });
  return done ?? readQueuedSignal(deps.dir, id);
}

/** Attempt every due signal once, oldest first, and delete settled files older than prune_after days. */
export async function flushSignalQueue(deps: QueueDeps): Promise<QueueFlushReport> {
  const report = await underLock(deps, async () => {
    let attempted = 0;
    let sent = 0;
    let failed = 0;
    const pendingTimes: number[] = [];
    for (const id of await listQueuedSignalIds(deps.dir)) {
      let entry = await readQueuedSignal(deps.dir, id);
      if (!entry) {
        await setAside(deps, id);
        continue;
      }
      if (isDueSignal(entry, deps.now()) && !deps.signal?.aborted) {
        entry = await attemptQueuedSignal(entry, deps);
        attempted++;
        if (entry.state === 'sent') sent++;
        if (entry.state === 'failed') failed++;
      }
      if (entry.state === 'pending')
        pendingTimes.push(entry.nextAttemptAt ? Date.parse(entry.nextAttemptAt) : deps.now());
      else await pruneIfOld(deps, entry);
    }
    return {
      attempted,
      sent,
      failed,
      pending: pendingTimes.length,
      ...(pendingTimes.length > 0 ? { nextDueAt: Math.min(...pendingTimes) } : {}),
    };
  });
  return report ?? { attempted: 0, sent: 0, failed: 0, pending: 0, busy: true };
}

async function setAside(deps: QueueDeps, id: string): Promise<void> {
  const file = filePath(deps.dir, id);
  const aside = `${file}.corrupt-${deps.now()}`;
  deps.log.error({ code: 'ERR_DEPLOYMENT_STATE', file, movedTo: aside }, 'queued signal file is corrupt; set aside');
  await fs
    .rename(file, aside)
    .catch((err: unknown) =>
      deps.log.warn({ file, reason: errorMessage(err) }, 'could not set aside the corrupt signal file'),
    );
}

async function pruneIfOld(deps: QueueDeps, entry: QueuedSignal): Promise<void> {
  if (deps.now() - Date.parse(entry.updatedAt) < deps.pruneAfterDays * DAY_MS) return;
  await fs
    .rm(filePath(deps.dir, entry.id), { force: true })
    .catch((err: unknown) =>
      deps.log.warn({ signalId: entry.id, reason: errorMessage(err) }, 'could not delete a settled signal file'),
    );
  releaseSecrets(tokenOwner(entry.id));
}

/** The logger's owner of a queued signal's token. */
function tokenOwner(id: string): string {
  return `queued signal ${id}`;
}
