// Periods measured from a stored wall-clock time (a record's removal, a file's mtime) that must not be cut short or
// stretched by a step of the clock. The first time a process sees a time, it turns what is left of the period into a
// deadline on the monotonic clock, and from then on only that clock counts: a clock stepped forward by a year does
// not end a seven-day grace at once, and one stepped back does not stretch it to a year. A stored time in the future
// (written while the clock was ahead) is taken as "now": the whole period is left. Only a period already over when
// the process first sees it ends at once (the process cannot tell what the clock did before it started).

export class WallDeadlines {
  private readonly due = new Map<string, number>();
  private readonly seen = new Set<string>();

  constructor(private readonly monotonic: () => number = () => performance.now()) {}

  /**
   * Whether `periodMs` has passed since `since` (epoch ms, as stored) for the thing named `key`. `now` is the wall
   * clock, read only the first time `key` is seen. A `since` that cannot be read never passes.
   */
  passed(key: string, since: number, periodMs: number, now: number): boolean {
    if (!Number.isFinite(since)) return false;
    const id = `${key}@${since}`;
    this.seen.add(id);
    let at = this.due.get(id);
    if (at === undefined) {
      const age = now - since;
      if (age >= periodMs) return true;
      at = this.monotonic() + (age >= 0 ? periodMs - age : periodMs);
      this.due.set(id, at);
    }
    return this.monotonic() >= at;
  }

  /** Forget the deadlines of things not asked about since the last sweep (gone, or their time changed). */
  sweep(): void {
    for (const id of this.due.keys()) if (!this.seen.has(id)) this.due.delete(id);
    this.seen.clear();
  }
}
