import { promises as fs } from 'node:fs';
import path from 'node:path';
import { errorMessage } from '../../errors.js';
import type { Logger } from '../../log/logger.js';
import { redactUrl, releaseSecrets, setSecrets } from '../../log/redact.js';
import { writeFileAtomic } from '../../util/atomic-write.js';
import { isSafeFileName } from '../../util/safe-name.js';
import { SignalTransitionError, stateError } from '../../state/errors.js';
import { moveSignal, type SignalEvent, type SignalState } from '../../state/signal-machine.js';
import { readStateFile } from '../../state/state-file.js';
import { ensureQueueDir } from '../../state/signal-queue-paths.js';
import { newSignalId, parseEntry, type NewSignal, type QueuedSignal, type QueuedSignalState } from './entry.js';

// The cfn-signal queue's storage: one file per signal, <state_dir>/signals/<id>.json, 0600 in a 0700 directory,
// written atomically. Every write of a signal's state goes through the signal table (src/state/signal-machine.ts):
// a move it lacks is refused before anything is written. Read by the sender and by `status`.

const FILE_MODE = 0o600;
const DAY_MS = 86_400_000;

function filePath(dir: string, id: string): string {
  return path.join(dir, `${id}.json`);
}

/** Put a signal on disk, pending; it is durable when this returns. */
export async function enqueueSignal(dir: string, signal: NewSignal, now: number): Promise<QueuedSignal> {
  await ensureQueueDir(dir);
  const at = new Date(now).toISOString();
  const id = newSignalId(now);
  const entry: QueuedSignal = {
    version: 1,
    id,
    kind: signal.kind,
    state: queuedState(id, 'none', 'queued'),
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

async function save(dir: string, entry: QueuedSignal): Promise<QueuedSignal> {
  const file = filePath(dir, entry.id);
  try {
    await writeFileAtomic(file, `${JSON.stringify(entry, null, 2)}\n`, { mode: FILE_MODE });
  } catch (err) {
    throw stateError('write', file, err);
  }
  return entry;
}

/** `next` in the state `event` moves `entry` to (the signal table), saved. */
export async function saveMove(
  dir: string,
  entry: QueuedSignal,
  event: SignalEvent,
  next: Omit<QueuedSignal, 'state'>,
): Promise<QueuedSignal> {
  return save(dir, { ...next, state: queuedState(entry.id, entry.state, event) });
}

/** The state `event` moves a queued signal to; a move the table lacks, or one to a state a queued signal never has
 * (none, cancelled), throws before anything is written. */
function queuedState(id: string, from: SignalState, event: SignalEvent): QueuedSignalState {
  const to = moveSignal(id, from, event);
  if (to === 'pending' || to === 'sent' || to === 'failed') return to;
  throw new SignalTransitionError(id, from, event);
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

/** A file that is not a queued signal, renamed aside (kept as it was, for the operator). */
export async function setAside(dir: string, id: string, now: number, log: Logger): Promise<void> {
  const file = filePath(dir, id);
  const aside = `${file}.corrupt-${now}`;
  log.error({ code: 'ERR_DEPLOYMENT_STATE', file, movedTo: aside }, 'queued signal file is corrupt; set aside');
  await fs
    .rename(file, aside)
    .catch((err: unknown) =>
      log.warn({ file, reason: errorMessage(err) }, 'could not set aside the corrupt signal file'),
    );
}

/** Delete a settled signal's file once it is `pruneAfterDays` old. */
export async function pruneIfOld(
  dir: string,
  entry: QueuedSignal,
  pruneAfterDays: number,
  now: number,
  log: Logger,
): Promise<void> {
  if (now - Date.parse(entry.updatedAt) < pruneAfterDays * DAY_MS) return;
  await fs
    .rm(filePath(dir, entry.id), { force: true })
    .catch((err: unknown) =>
      log.warn({ signalId: entry.id, reason: errorMessage(err) }, 'could not delete a settled signal file'),
    );
  releaseSecrets(tokenOwner(entry.id));
}

/** The logger's owner of a queued signal's token. */
function tokenOwner(id: string): string {
  return `queued signal ${id}`;
}
