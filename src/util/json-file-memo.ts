import { createHash } from 'node:crypto';
import { fileMark, unchangedSince, type FileMark } from './file-mark.js';
import { parseJsonBytes, readCappedFile, type JsonFileResult } from './read-json-file.js';

// A JSON file a collector reads at every poll. Most polls find it as it was: a file whose mark (util/file-mark.ts:
// inode, size and times, taken once it had settled) is unchanged is not read again, and one whose bytes have the same
// digest as at the last read is not parsed again; either way the value parsed then is returned, the very same object
// (a 4 MB document costs ~150-250 ms to parse, ~10 ms to read and digest, a few µs to stat).

export type MemoJsonResult = (JsonFileResult & { ok: false }) | { ok: true; value: unknown; digest: string };

interface KnownFile {
  readonly mark: FileMark | undefined;
  /** The size limit it was read under: a lower one must see the file again. */
  readonly maxBytes: number;
  readonly digest: string;
  readonly value: unknown;
}

export class JsonFileMemo {
  private readonly known = new Map<string, KnownFile>();

  constructor(private readonly now: () => number = Date.now) {}

  async read(file: string, maxBytes: number): Promise<MemoJsonResult> {
    // Taken before the read: a write after it shows in the next poll's mark.
    const mark = markOf(file, this.now());
    const before = this.known.get(file);
    if (before?.maxBytes === maxBytes && mark && unchangedSince(before.mark, mark))
      return { ok: true, value: before.value, digest: before.digest };
    const read = await readCappedFile(file, maxBytes);
    if (!read.ok) {
      this.known.delete(file);
      return read;
    }
    const digest = createHash('sha256').update(read.bytes).digest('base64');
    if (before?.digest === digest) {
      this.known.set(file, { ...before, mark, maxBytes });
      return { ok: true, value: before.value, digest };
    }
    const parsed = parseJsonBytes(read.bytes);
    if (!parsed.ok) {
      this.known.delete(file);
      return parsed;
    }
    this.known.set(file, { mark, maxBytes, digest, value: parsed.value });
    return { ok: true, value: parsed.value, digest };
  }

  /** Forget the files not read in the last pass (a directory's entries come and go). */
  keepOnly(files: ReadonlySet<string>): void {
    for (const file of this.known.keys()) if (!files.has(file)) this.known.delete(file);
  }
}

/** The file's mark, or undefined when it cannot be had (the read then says why). */
function markOf(file: string, nowMs: number): FileMark | undefined {
  try {
    return fileMark(file, nowMs);
  } catch {
    return undefined;
  }
}
