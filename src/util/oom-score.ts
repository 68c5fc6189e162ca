import { readFileSync, writeFileSync } from 'node:fs';

// The agent's unit gives it a negative oom_score_adj so that the kernel kills a runaway deployment before the agent.
// Children inherit that value at fork, and Node offers no hook between fork and exec, so the agent raises its own
// value to CHILD_OOM_SCORE_ADJ for the instant of the (synchronous) spawn and lowers it back at once: the child is
// born with the neutral value, and so is everything it starts, however early. Lowering back needs no privilege down
// to the lowest value systemd gave the process (the kernel's oom_score_adj_min); where the first try shows it cannot
// (a process that lowered its value without that floor), the agent keeps its own value and writes the child's
// /proc/<pid>/oom_score_adj right after the spawn instead, which leaves a process the tool forks in its first
// instant at the agent's value (docs/systemd.md).

/** The kernel's neutral value: a deployment's processes are judged like any other process. */
const CHILD_OOM_SCORE_ADJ = 0;

let ownOomScoreAdj: number | undefined;
/** Whether the agent can lower its value back after raising it for a spawn; undefined until first needed. */
let canLowerBack: boolean | undefined;

/** This process's oom_score_adj, read once (0 where /proc cannot tell). */
function readOwnOomScoreAdj(): number {
  if (ownOomScoreAdj === undefined) {
    try {
      ownOomScoreAdj = Number.parseInt(readFileSync('/proc/self/oom_score_adj', 'utf8'), 10) || 0;
    } catch {
      ownOomScoreAdj = 0;
    }
  }
  return ownOomScoreAdj;
}

function writeOomScoreAdj(pid: number | 'self', value: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/oom_score_adj`, `${value}\n`);
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether raising the agent's own value for a spawn is safe: tried once with one step up and back, so a process
 * that cannot lower its value again loses nothing that matters.
 */
function lowerBackWorks(own: number): boolean {
  if (canLowerBack === undefined) {
    canLowerBack = own < 1000 && writeOomScoreAdj('self', own + 1) && writeOomScoreAdj('self', own);
  }
  return canLowerBack;
}

/**
 * Runs `start` (a synchronous spawn) so that the process it starts is born with oom_score_adj `target` when the
 * agent's own is lower; returns what `start` returned and whether the child still needs raising afterwards.
 */
export function spawnWithOomScoreAdj<T>(
  start: () => T,
  target: number = CHILD_OOM_SCORE_ADJ,
  own: number = readOwnOomScoreAdj(),
): { value: T; raiseAfter: boolean } {
  if (own >= target) return { value: start(), raiseAfter: false };
  if (!lowerBackWorks(own) || !writeOomScoreAdj('self', target)) return { value: start(), raiseAfter: true };
  try {
    return { value: start(), raiseAfter: false };
  } finally {
    // Cannot fail after the probe succeeded; if it somehow did, later spawns fall back to raising after the fact.
    if (!writeOomScoreAdj('self', own)) canLowerBack = false;
  }
}

/** Raises a child's oom_score_adj to `target` when the agent's own is lower; a failure only leaves it as inherited. */
export function raiseOomScoreAdj(
  pid: number,
  target: number = CHILD_OOM_SCORE_ADJ,
  own: number = readOwnOomScoreAdj(),
): boolean {
  if (own >= target) return false;
  // The process may already be gone; it then needs no adjustment.
  return writeOomScoreAdj(pid, target);
}

/**
 * Starts a process with `start` (a synchronous spawn) so that it is born with the neutral oom_score_adj, or raised to
 * it at once where the agent cannot lower its own value back: how process-group.ts, the one place that starts
 * processes, starts each.
 */
export function startBornNeutral<T extends { readonly pid?: number | undefined }>(
  start: () => T,
  target: number = CHILD_OOM_SCORE_ADJ,
): T {
  const { value, raiseAfter } = spawnWithOomScoreAdj(start, target);
  if (raiseAfter && value.pid !== undefined) raiseOomScoreAdj(value.pid, target);
  return value;
}
