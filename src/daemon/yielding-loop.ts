import type { Logger } from '../log/logger.js';
import { RetryLoop, type RetryPass, type RetryPassResult } from './retry-loop.js';

// Background work that gives way: a RetryLoop whose pass the poll loop can stop, and hold off, while a cycle with new
// data runs. The re-runs of finished deployments are such work: a new deployment goes first, and the phases and
// templates of a cycle never run beside a re-run.

export class YieldingLoop {
  private readonly loop: RetryLoop;
  private holds = 0;
  private current: { readonly stop: AbortController; readonly done: Promise<unknown> } | undefined;

  constructor(name: string, pass: RetryPass, log: Logger) {
    this.loop = new RetryLoop(name, (signal) => this.guarded(pass, signal), log);
  }

  /** Passes until the signal aborts; resolves then. Never rejects. */
  run(signal: AbortSignal): Promise<void> {
    return this.loop.run(signal);
  }

  /** Run a pass as soon as possible (unless held). */
  wake(): void {
    this.loop.wake();
  }

  /** Stops the pass in progress (its signal aborts) and waits for it to end; no pass starts until release(). */
  async hold(): Promise<void> {
    this.holds++;
    const current = this.current;
    if (!current) return;
    current.stop.abort();
    await current.done;
  }

  /** Ends one hold; when none is left, a pass runs at once (the work that went first may have made some due). */
  release(): void {
    this.holds = Math.max(0, this.holds - 1);
    if (this.holds === 0) this.loop.wake();
  }

  private async guarded(pass: RetryPass, signal: AbortSignal): Promise<RetryPassResult> {
    // Held: nothing until release() wakes the loop.
    if (this.holds > 0) return {};
    const stop = new AbortController();
    const onAbort = () => stop.abort();
    if (signal.aborted) stop.abort();
    else signal.addEventListener('abort', onAbort, { once: true });
    const done = pass(stop.signal);
    this.current = { stop, done: done.catch(() => undefined) };
    try {
      return await done;
    } finally {
      this.current = undefined;
      signal.removeEventListener('abort', onAbort);
    }
  }
}
