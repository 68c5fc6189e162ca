import type { Logger } from '../log/logger.js';
import { errorMessage } from '../errors.js';
import { Waker } from './waker.js';

// Background work that runs beside the poll loop and decides itself when it is next due: the deployment signal
// outbox. Each pass says when it wants to run again (or not until woken). A poll cycle that queued new work wakes it;
// a failing pass is logged and retried later, never taking the daemon down.

export interface RetryPassResult {
  /** Epoch ms when the next pass is due; undefined: only when woken. */
  readonly nextDueAt?: number;
  /** The work is held by another process: try again soon. */
  readonly busy?: boolean;
  /** Signals delivered to Heat in this pass (the poll loop then polls soon: Heat publishes what depended on them). */
  readonly sent?: number;
}

export type RetryPass = (signal: AbortSignal) => Promise<RetryPassResult>;

export interface RetryLoopOptions {
  readonly now?: () => number;
  /** Wait after a failing or busy pass. */
  readonly retryMs?: number;
}

export const RETRY_LOOP_RETRY_MS = 30_000;

export class RetryLoop {
  private readonly waker = new Waker();
  private readonly now: () => number;
  private readonly retryMs: number;

  constructor(
    private readonly name: string,
    private readonly pass: RetryPass,
    private readonly log: Logger,
    options: RetryLoopOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.retryMs = options.retryMs ?? RETRY_LOOP_RETRY_MS;
  }

  /** Run a pass as soon as possible (the current wait ends). */
  wake(): void {
    this.waker.wake();
  }

  /** Passes until the signal aborts; resolves then. Never rejects. */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      let waitMs: number;
      try {
        const result = await this.pass(signal);
        waitMs = waitFor(result, this.now(), this.retryMs);
      } catch (err) {
        this.log.error(
          { work: this.name, reason: errorMessage(err), retryInSeconds: this.retryMs / 1000 },
          'background work failed; retrying later',
        );
        waitMs = this.retryMs;
      }
      if (signal.aborted) break;
      await this.waker.wait(waitMs, signal);
    }
  }
}

// setTimeout cannot wait longer than 2^31-1 ms; "until woken" is that long, then a harmless extra pass.
const FOREVER_MS = 2 ** 31 - 1;

/** How long to wait after a pass: pure, so tests check it directly. */
export function waitFor(result: RetryPassResult, now: number, retryMs: number): number {
  if (result.busy) return retryMs;
  if (result.nextDueAt === undefined) return FOREVER_MS;
  return Math.min(FOREVER_MS, Math.max(0, result.nextDueAt - now));
}
