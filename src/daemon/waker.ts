// An interruptible sleep: the poll loop waits here; a watched local change or a signal handler wakes it early.
export type WakeReason = 'timeout' | 'woken' | 'aborted';

export class Waker {
  private pending = false;
  private release: ((reason: WakeReason) => void) | undefined;

  /** Wake the current wait, or make the next wait return at once. */
  wake(): void {
    if (this.release) this.release('woken');
    else this.pending = true;
  }

  wait(ms: number, signal: AbortSignal): Promise<WakeReason> {
    if (signal.aborted) return Promise.resolve('aborted');
    if (this.pending) {
      this.pending = false;
      return Promise.resolve('woken');
    }
    return new Promise<WakeReason>((resolve) => {
      const finish = (reason: WakeReason) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        this.release = undefined;
        resolve(reason);
      };
      const onAbort = () => finish('aborted');
      // A timer cannot wait longer than 2^31-1 ms (a longer one fires at once): wake then, a harmless extra pass.
      const timer = setTimeout(() => finish('timeout'), Math.min(Math.max(0, ms), 0x7fffffff));
      signal.addEventListener('abort', onAbort, { once: true });
      this.release = finish;
    });
  }
}
