import { observeProcesses, type ProcessObserver } from '../util/process-group.js';

// The systemd watchdog (WatchdogSec=), fed from the poll loop's progress. A timer looks every half period, but it
// feeds only while the loop is within what it promised: at each step the loop says by when it will make progress
// again (the end of a sleep, a cycle's stall budget). A loop stuck past that stops the feeding and systemd restarts
// the agent; an event loop that is blocked feeds nothing either, since the timer cannot run.
//
// A long deployment is progress, not a stall: each process the agent starts with a timeout extends the promise to
// that timeout (its kill is the progress), and one with no timeout ([deploy] hook_timeout = 0) for as long as it
// runs. Starts and ends of processes count as progress too.

export interface WatchdogOptions {
  /** How often the timer looks: half of WatchdogSec (sd_watchdog_enabled's period). */
  readonly intervalMs: number;
  readonly feed: () => void;
  readonly now?: () => number;
}

export class LoopWatchdog implements ProcessObserver {
  private readonly now: () => number;
  private deadline: number;
  private stallMs = 0;
  private readonly processes = new Map<number, number>();
  private timer: NodeJS.Timeout | undefined;
  private unobserve: (() => void) | undefined;

  constructor(private readonly options: WatchdogOptions) {
    // Monotonic: a step of the wall clock forward must not look like a stall (systemd would restart a healthy agent),
    // nor one back hide a real one.
    this.now = options.now ?? (() => performance.now());
    this.deadline = this.now();
  }

  /** The loop will make progress again within `withinMs`; `stallMs` is the budget a process start or end renews. */
  progress(withinMs: number, stallMs: number = this.stallMs): void {
    this.stallMs = stallMs;
    this.deadline = this.now() + withinMs;
  }

  started(pid: number, timeoutMs: number): void {
    this.processes.set(pid, timeoutMs > 0 ? this.now() + timeoutMs + this.stallMs : Number.POSITIVE_INFINITY);
    this.deadline = Math.max(this.deadline, this.now() + this.stallMs);
  }

  ended(pid: number): void {
    this.processes.delete(pid);
    this.deadline = Math.max(this.deadline, this.now() + this.stallMs);
  }

  /** The loop is within its promise (or a process it started is within its timeout). */
  healthy(): boolean {
    const now = this.now();
    if (now <= this.deadline) return true;
    for (const until of this.processes.values()) if (now <= until) return true;
    return false;
  }

  /** One look of the timer: feeds when healthy; returns whether it fed. */
  tick(): boolean {
    if (!this.healthy()) return false;
    this.options.feed();
    return true;
  }

  start(): void {
    if (this.timer) return;
    this.unobserve = observeProcesses(this);
    this.timer = setInterval(() => this.tick(), this.options.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.unobserve?.();
    this.unobserve = undefined;
  }
}
