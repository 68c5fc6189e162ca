// A condition that holds poll after poll (a missing directory, a group-writable file, no data at all) is logged when
// it starts and when it ends, never at every poll in between: at 1 s polling an info line per poll buries the journal.
// A pass reports the conditions that hold in it; those of the last whole pass that no longer hold are ended.

export class SteadyConditions {
  /** Conditions that held in the last whole pass, with what to log when each ends. */
  private active = new Map<string, () => void>();
  private current = new Map<string, () => void>();

  /** `key` holds in this pass: `started` is logged if it did not hold in the last one; `ended` once it stops. */
  hold(key: string, started: () => void, ended: () => void): void {
    if (!this.active.has(key) && !this.current.has(key)) started();
    this.current.set(key, ended);
  }

  /** The pass saw everything it looks at: conditions that did not hold in it have ended. */
  endPass(): void {
    for (const [key, ended] of this.active) if (!this.current.has(key)) ended();
    this.active = this.current;
    this.current = new Map();
  }

  /** The pass stopped early (its source failed): what it saw is kept, nothing is taken as ended. */
  abandonPass(): void {
    for (const [key, ended] of this.current) this.active.set(key, ended);
    this.current = new Map();
  }
}
