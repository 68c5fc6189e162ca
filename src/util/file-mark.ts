import { statSync, type BigIntStats } from 'node:fs';

// A file's identity as stat shows it: inode, size, modification and change times. A write in place moves the change
// time, which no one can set by hand; a file replaced by rename is another inode. Filesystems keep those times at a
// coarse tick, though, so a second write of the same size within the tick of the first leaves the mark as it was: a
// mark taken less than SETTLE_MS after the file last changed is not trusted to show a later change (git's "racily
// clean" entries).

const SETTLE_MS = 2000n;

export interface FileMark {
  readonly ino: bigint;
  readonly size: bigint;
  readonly mtimeNs: bigint;
  readonly ctimeNs: bigint;
  /** The file had not changed for SETTLE_MS when the mark was taken: a later change shows in a new mark. */
  readonly settled: boolean;
}

/** The file's mark; undefined when it does not exist. Throws when it cannot be read (EACCES, ELOOP...). */
export function fileMark(file: string, nowMs: number = Date.now()): FileMark | undefined {
  const st: BigIntStats | undefined = statSync(file, { bigint: true, throwIfNoEntry: false });
  if (!st) return undefined;
  const nowNs = BigInt(Math.floor(nowMs)) * 1_000_000n;
  const changedNs = st.ctimeNs > st.mtimeNs ? st.ctimeNs : st.mtimeNs;
  return {
    ino: st.ino,
    size: st.size,
    mtimeNs: st.mtimeNs,
    ctimeNs: st.ctimeNs,
    settled: nowNs - changedNs >= SETTLE_MS * 1_000_000n,
  };
}

/** Whether `now` shows the file unchanged since `before` was taken (both missing counts as unchanged). */
export function unchangedSince(before: FileMark | undefined, now: FileMark | undefined): boolean {
  if (before === undefined || now === undefined) return before === now;
  return (
    before.settled &&
    before.ino === now.ino &&
    before.size === now.size &&
    before.mtimeNs === now.mtimeNs &&
    before.ctimeNs === now.ctimeNs
  );
}
