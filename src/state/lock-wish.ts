import { constants as fsConstants, watch, type FSWatcher } from 'node:fs';
import { open, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { currentIdentity, formatIdentity, isRunning, parseIdentity } from '../util/process-identity.js';

// An operator's command goes before a re-run. Re-runs of finished deployments hold the deploy lock like any pass, but
// they can stop and be done later, so a process refused the lock (deploy --rerun, --forget, a pass by hand) says
// that it waits in <lock file>.wanted, holding its identity (pid, start time, boot: util/process-identity.ts, as the
// lock file itself names its holder), and a holder running re-runs gives the lock up when it sees one. The wish only
// asks: the flock (util/file-lock.ts) still decides who holds the lock. A wish whose process is gone (or whose pid
// now names another process) is ignored: a command killed while it waited holds nothing up.

/** The file a waiting process writes: the lock file's name with `.wanted`. */
export function wishFile(lockFile: string): string {
  return `${lockFile}.wanted`;
}

/**
 * Says that this process waits for the lock (written again at each try: another waiter may have replaced it). Written
 * beside the lock file, in the directory the lock's trust rule accepted, without following a link planted there.
 */
export async function wishForLock(lockFile: string): Promise<void> {
  const flags =
    fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_TRUNC | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK;
  try {
    const handle = await open(wishFile(lockFile), flags, 0o600);
    try {
      await handle.writeFile(`${formatIdentity(currentIdentity())}\n`);
    } finally {
      await handle.close();
    }
  } catch {
    // Without a wish the command still gets the lock, once the re-runs in progress end.
  }
}

/** Takes this process's wish back, once it has the lock or gave up. Another process's wish is left alone. */
export async function withdrawWish(lockFile: string): Promise<void> {
  if ((await wisher(lockFile))?.pid === process.pid)
    await rm(wishFile(lockFile), { force: true }).catch(() => undefined);
}

/** Whether another running process waits for the lock. */
export async function lockWished(lockFile: string): Promise<boolean> {
  const identity = await wisher(lockFile);
  return identity !== undefined && identity.pid !== process.pid && isRunning(identity);
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

async function wisher(lockFile: string) {
  const text = await readFile(wishFile(lockFile), {
    encoding: 'utf8',
    flag: fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW,
  }).catch(() => '');
  return parseIdentity(text);
}
