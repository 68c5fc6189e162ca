import { readFileSync } from 'node:fs';

// Which process a recorded pid names. A pid alone could by now name an unrelated process, so the process's start time
// (field 22 of /proc/<pid>/stat) must match the one recorded; for facts kept across reboots, the boot id too. Used for
// the owners of the agent's locks, the daemon's presence, and hooks left running by an agent that died alone.

/** Start time of a process in clock ticks since boot, as text; undefined when it is gone or /proc is unreadable. */
export function processStartTicks(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: fields are counted after its last ")".
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[19];
  } catch {
    return undefined;
  }
}

/** The same process as recorded (pid and start time), still there. */
export function isSameProcess(pid: number, startTicks: string): boolean {
  return processStartTicks(pid) === startTicks;
}

// A pid and a start time are unique only within one boot: after a power cut the early services start in the same
// order, and the daemon of the last boot may come back with its old pid and start time as another process. Facts that
// outlive a boot (files under /var/lib) also carry the kernel's boot id.

let ownBootId: string | undefined;

/** The kernel's random id of this boot; '' where /proc cannot tell (it then matches only itself). */
export function bootId(): string {
  if (ownBootId === undefined) {
    try {
      ownBootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    } catch {
      ownBootId = '';
    }
  }
  return ownBootId;
}

/** Which process this is, across reboots: pid, start time in clock ticks since boot, and the boot. */
export interface ProcessIdentity {
  readonly pid: number;
  readonly startTicks: string;
  /** Absent in lines written before boot ids were recorded. */
  readonly bootId?: string;
}

export function currentIdentity(): ProcessIdentity {
  return { pid: process.pid, startTicks: processStartTicks(process.pid) ?? '0', bootId: bootId() };
}

/** One line: "<pid> <start ticks> <boot id>". */
export function formatIdentity(identity: ProcessIdentity): string {
  return [identity.pid, identity.startTicks, ...(identity.bootId ? [identity.bootId] : [])].join(' ');
}

/** The identity in a line formatIdentity wrote (or an older "<pid> <start ticks>"); undefined for anything else. */
export function parseIdentity(text: string): ProcessIdentity | undefined {
  const [pidText, startTicks, id, extra] = text.trim().split(/\s+/);
  const pid = Number(pidText);
  if (!Number.isSafeInteger(pid) || pid <= 0 || startTicks === undefined || !/^\d+$/.test(startTicks)) return undefined;
  if (extra !== undefined) return undefined;
  return { pid, startTicks, ...(id !== undefined ? { bootId: id } : {}) };
}

/** The recorded process is still running: same boot (when recorded), same pid, same start time. */
export function isRunning(identity: ProcessIdentity): boolean {
  if (identity.bootId !== undefined && identity.bootId !== bootId()) return false;
  return isSameProcess(identity.pid, identity.startTicks);
}

/**
 * A hook left running by an agent that died alone (killed outside systemd, whose KillMode=mixed would have ended the
 * whole cgroup). Hooks lead their own process group, so the group outlives the agent; before the deployment is run
 * again, that group is ended, or the orphan and the new run would work side by side.
 *
 * SIGKILL the orphan's process group when the recorded process still exists, then wait (bounded) until it is gone.
 * Returns whether an orphan was found.
 */
export async function killOrphanHook(pid: number, startTicks: string, waitMs = 5000): Promise<boolean> {
  if (!Number.isInteger(pid) || pid <= 1 || !isSameProcess(pid, startTicks)) return false;
  for (const target of [-pid, pid]) {
    try {
      process.kill(target, 'SIGKILL');
    } catch {
      // Not a group leader any more, or already gone.
    }
  }
  const deadline = performance.now() + waitMs;
  while (isSameProcess(pid, startTicks) && performance.now() < deadline) {
    // A killed process lingers as a zombie until its parent (init, for an orphan) reaps it.
    if (readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z ')) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return true;
}
