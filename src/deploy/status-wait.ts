import { setTimeout as sleep } from 'node:timers/promises';
import { EXIT, verdictOf, type StatusReport, type Verdict } from './status-report.js';

// `status --wait`: read the state files again every interval until nothing is in progress or the time is up. Only
// reads, so any number of waiters can run beside the daemon and each other.

export interface WaitOptions {
  /** 0: no limit. */
  readonly timeoutMs: number;
  readonly intervalMs: number;
  readonly signal?: AbortSignal;
  readonly now?: () => number;
}

export async function waitForVerdict(read: () => Promise<StatusReport>, options: WaitOptions): Promise<{ report: StatusReport; verdict: Verdict }> {
  const now = options.now ?? Date.now;
  const deadline = options.timeoutMs > 0 ? now() + options.timeoutMs : Infinity;
  for (;;) {
    const report = await read();
    const verdict = verdictOf(report);
    if (verdict.exitCode !== EXIT.waiting) return { report, verdict };
    const left = deadline - now();
    if (left <= 0 || options.signal?.aborted) return { report, verdict };
    await sleep(Math.min(options.intervalMs, left), undefined, options.signal ? { signal: options.signal } : {}).catch(() => undefined);
  }
}
