import { readFileSync } from 'node:fs';

// A hook left running by an agent that died alone (killed outside systemd, whose KillMode=mixed would have ended the
// whole cgroup). Hooks lead their own process group, so the group outlives the agent; before the deployment is run
// again, that group is ended, or the orphan and the new run would work side by side. A pid alone could by now name an
// unrelated process, so the process's start time (field 22 of /proc/<pid>/stat) must match the one recorded.

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

/**
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
  const deadline = Date.now() + waitMs;
  while (isSameProcess(pid, startTicks) && Date.now() < deadline) {
    // A killed process lingers as a zombie until its parent (init, for an orphan) reaps it.
    if (readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z ')) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return true;
}
