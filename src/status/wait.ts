import { setTimeout as sleep } from 'node:timers/promises';
import { EXIT, type Verdict } from './verdict.js';

// `status --wait` (the whole report, or one deployment's): read the state files again every interval until the
// verdict is no longer "still in progress" or the time is up. Only reads, so any number of waiters can run beside
// the daemon and each other.

export interface WaitOptions {
  /** 0: no limit. */
  readonly timeoutMs: number;
  readonly intervalMs: number;
  readonly signal?: AbortSignal;
  readonly now?: () => number;
}

/** The last reading: the first whose verdict is not "waiting", or the one read when the time ran out or the wait was aborted. */
export async function waitForVerdict<R extends { readonly verdict: Verdict }>(
  read: () => Promise<R>,
  options: WaitOptions,
): Promise<R> {
  const now = options.now ?? Date.now;
  const deadline = options.timeoutMs > 0 ? now() + options.timeoutMs : Infinity;
  for (;;) {
    const reading = await read();
    if (reading.verdict.exitCode !== EXIT.waiting) return reading;
    const left = deadline - now();
    if (left <= 0 || options.signal?.aborted) return reading;
    await sleep(Math.min(options.intervalMs, left), undefined, options.signal ? { signal: options.signal } : {}).catch(
      () => undefined,
    );
  }
}
