import { watch, type FSWatcher } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { isAlive } from './deploy-lock.js';

// An operator's command goes before a re-run. Re-runs of finished deployments hold the deploy lock like any pass, but
// they can stop and be done later, so a process that waits for the lock (deploy --rerun, --forget, a pass by hand)
// says so in <lock file>.wanted, holding its pid, and a holder running re-runs gives the lock up when it sees one.
// A wish whose process is gone is ignored: a command killed while it waited holds nothing up.

/** The file a waiting process writes: the lock file's name with `.wanted`. */
export function wishFile(lockFile: string): string {
  return `${lockFile}.wanted`;
}

/** Says that this process waits for the lock (written again at each try: another waiter may have replaced it). */
export async function wishForLock(lockFile: string): Promise<void> {
  await writeFile(wishFile(lockFile), `${process.pid}\n`, { mode: 0o600 }).catch(() => undefined);
}

/** Takes this process's wish back, once it has the lock or gave up. Another process's wish is left alone. */
export async function withdrawWish(lockFile: string): Promise<void> {
  if ((await wisher(lockFile)) === process.pid) await rm(wishFile(lockFile), { force: true }).catch(() => undefined);
}

/** Whether another live process waits for the lock. */
export async function lockWished(lockFile: string): Promise<boolean> {
  const pid = await wisher(lockFile);
  return pid !== undefined && pid !== process.pid && isAlive(pid);
}

/**
 * Calls `onWish` once another process says it waits for the lock (inotify on the lock's directory, no polling). The
 * returned function stops watching. Where the directory cannot be watched, wishes are seen only between re-runs.
 */
export function watchWishes(lockFile: string, onWish: () => void): () => void {
  const name = path.basename(wishFile(lockFile));
  let watcher: FSWatcher | undefined;
  let fired = false;
  const check = () => {
    void lockWished(lockFile).then((wished) => {
      if (!wished || fired) return;
      fired = true;
      onWish();
    });
  };
  try {
    watcher = watch(path.dirname(lockFile), (_event, file) => {
      if (file === name) check();
    });
    watcher.on('error', () => watcher?.close());
  } catch {
    watcher = undefined;
  }
  return () => watcher?.close();
}

async function wisher(lockFile: string): Promise<number | undefined> {
  const text = await readFile(wishFile(lockFile), 'utf8').catch(() => '');
  const pid = Number.parseInt(text.trim(), 10);
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}
