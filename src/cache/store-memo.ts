import { fileMark, unchangedSince, type FileMark } from '../util/file-mark.js';

// What the cache verified of each key at its last store, kept by the daemon across polls. When a poll hands the cache
// the very same value (the same object: its source said unchanged, so nothing was parsed) and none of the key's files
// (<key>.json, .orig, .last) has changed since (util/file-mark.ts), the answer is the one found then, without reading
// or parsing them.

interface Verified {
  readonly value: unknown;
  readonly marks: readonly (FileMark | undefined)[];
  readonly matchesLast: boolean;
}

export class StoreMemo {
  private readonly verified = new Map<string, Verified>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Whether `value` matched the key's committed value when last verified; undefined when that must be checked. */
  matchesLast(file: string, value: unknown): boolean | undefined {
    const known = this.verified.get(file);
    if (known === undefined || known.value !== value) return undefined;
    const now = marksOf(file, this.now());
    return now?.every((mark, i) => unchangedSince(known.marks[i], mark)) ? known.matchesLast : undefined;
  }

  /** After a store that read the files: what it found, with the files as they are now. */
  remember(file: string, value: unknown, matchesLast: boolean): void {
    const marks = marksOf(file, this.now());
    if (marks) this.verified.set(file, { value, marks, matchesLast });
    else this.verified.delete(file);
  }

  forget(file: string): void {
    this.verified.delete(file);
  }

  /** Forget the keys not stored in the last pass (their values are no longer held). */
  keepOnly(files: ReadonlySet<string>): void {
    for (const file of this.verified.keys()) if (!files.has(file)) this.verified.delete(file);
  }
}

/** The marks of a key's three files (undefined for one that is missing); undefined when one cannot be read. */
function marksOf(file: string, nowMs: number): (FileMark | undefined)[] | undefined {
  try {
    return [file, `${file}.orig`, `${file}.last`].map((f) => fileMark(f, nowMs));
  } catch {
    return undefined;
  }
}
