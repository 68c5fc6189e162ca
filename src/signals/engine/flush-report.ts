import type { SignalState } from '../../state/signal-machine.js';

// What one flush of a store of signals did, counted the same way for the outbox and the cfn-signal queue.

export interface FlushReport {
  readonly attempted: number;
  readonly sent: number;
  readonly failed: number;
  /** Signals still waiting after this flush. */
  readonly pending: number;
  /** Epoch ms of the earliest pending retry, if any. */
  readonly nextDueAt?: number;
  /** Another process holds the store's lock; nothing was attempted. */
  readonly busy?: boolean;
}

export const BUSY: FlushReport = { attempted: 0, sent: 0, failed: 0, pending: 0, busy: true };

/** How many signals wait, and when the first of them is due (epoch ms, one per pending signal). */
export function waitingSummary(dueTimes: readonly number[]): { pending: number; nextDueAt?: number } {
  return { pending: dueTimes.length, ...(dueTimes.length > 0 ? { nextDueAt: Math.min(...dueTimes) } : {}) };
}

/** The attempts of one flush and how they ended. */
export class FlushTally {
  private attempted = 0;
  private sent = 0;
  private failed = 0;

  /** One attempt, after which the signal is in `state`. */
  count(state: SignalState): void {
    this.attempted++;
    if (state === 'sent') this.sent++;
    if (state === 'failed') this.failed++;
  }

  report(dueTimes: readonly number[]): FlushReport {
    return { attempted: this.attempted, sent: this.sent, failed: this.failed, ...waitingSummary(dueTimes) };
  }
}
