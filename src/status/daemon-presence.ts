import path from 'node:path';
import type { AgentConfig } from '../config/options.js';
import { AgentError } from '../errors.js';
import { readFileIfExists } from '../util/atomic-write.js';
import { LockHeldError, lockFile, type FileLock } from '../util/file-lock.js';
import { isRunning, parseIdentity, type ProcessIdentity } from '../util/process-identity.js';

// Whether a daemon runs on this root: <state_dir>/daemon.pid is locked (util/file-lock.ts) by the looping agent for
// its whole life and holds its pid, start time and boot id. Claiming it is what keeps a second `run` daemon from
// starting; the kernel drops the lock when the daemon ends, however it ends. Readers (`status`, `cfn-signal`) only
// read the line and check that its process still runs, so a line left by a killed daemon whose pid now names another
// process, or by the last boot, does not count.

export function daemonPresenceFile(config: AgentConfig): string {
  return path.join(config.agent.state_dir, 'daemon.pid');
}

/** A daemon already runs on this root. */
export class DaemonRunningError extends AgentError {
  override name = 'DaemonRunningError';
  constructor(
    readonly file: string,
    readonly holder: ProcessIdentity | undefined,
  ) {
    super(
      'ERR_LOCKED',
      `another os-config-agent daemon runs on this root (${holder ? `process ${holder.pid}` : `it holds ${file}`}); ` +
        'stop it before starting one more (systemctl stop os-config-agent), or use `run --one-time`',
    );
  }
}

interface Claim {
  readonly lock: FileLock;
  holders: number;
}

/** This process's claims, by file: the run command and the signal queue service claim the same one. */
const claims = new Map<string, Promise<Claim>>();

/**
 * Say this process is the daemon, for as long as the returned function is not called; throws DaemonRunningError when
 * another process is. Claiming again in the same process shares the claim.
 */
export async function claimDaemon(file: string): Promise<() => Promise<void>> {
  let pending = claims.get(file);
  if (!pending) {
    pending = lockFile(file).then((lock) => ({ lock, holders: 0 }));
    claims.set(file, pending);
    pending.catch(() => claims.delete(file));
  }
  let claim: Claim;
  try {
    claim = await pending;
  } catch (err) {
    if (err instanceof LockHeldError) throw new DaemonRunningError(file, err.holder);
    throw err;
  }
  claim.holders++;
  let withdrawn = false;
  return async () => {
    if (withdrawn) return;
    withdrawn = true;
    if (--claim.holders > 0) return;
    claims.delete(file);
    await claim.lock.release();
  };
}

/** The pid of the running daemon, or undefined when none runs. */
export async function runningDaemon(file: string): Promise<number | undefined> {
  const text = await readFileIfExists(file).catch(() => undefined);
  const identity = parseIdentity(text ?? '');
  return identity && isRunning(identity) ? identity.pid : undefined;
}
