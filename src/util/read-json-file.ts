import { constants as fsConstants, promises as fs } from 'node:fs';
import { parsePythonJson } from './python-json-parse.js';

type ReadFailure = {
  ok: false;
  reason: 'missing' | 'too-large' | 'unreadable' | 'invalid-json' | 'not-a-file';
  detail: string;
};

export type JsonFileResult = { ok: true; value: unknown; size: number } | ReadFailure;

export type CappedFileResult = { ok: true; bytes: Buffer } | Exclude<ReadFailure, { reason: 'invalid-json' }>;

/** Read and parse a JSON file with a size cap, reporting each failure as a value (callers decide severity). */
export async function readJsonFile(file: string, maxBytes: number): Promise<JsonFileResult> {
  const read = await readCappedFile(file, maxBytes);
  return read.ok ? parseJsonBytes(read.bytes) : read;
}

/** Parse a JSON file's bytes (UTF-8) as Python's json would read them. */
export function parseJsonBytes(bytes: Buffer): JsonFileResult {
  try {
    return { ok: true, value: parsePythonJson(bytes.toString('utf8')), size: bytes.length };
  } catch (err) {
    return { ok: false, reason: 'invalid-json', detail: (err as Error).message };
  }
}

/** A regular file's bytes, at most maxBytes of them (a larger file is refused, however it grows while read). */
export async function readCappedFile(file: string, maxBytes: number): Promise<CappedFileResult> {
  let handle: fs.FileHandle | undefined;
  try {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever; the stat below rejects it.
    handle = await fs.open(file, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
    const st = await handle.stat();
    if (!st.isFile()) return { ok: false, reason: 'not-a-file', detail: 'not a regular file' };
    if (st.size > maxBytes)
      return { ok: false, reason: 'too-large', detail: `${st.size} bytes is over the ${maxBytes}-byte limit` };
    // Read at most maxBytes + 1 so a file growing under us cannot blow the cap.
    const buf = Buffer.alloc(Math.min(st.size, maxBytes) + 1);
    let total = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buf, total, buf.length - total, total);
      if (bytesRead === 0) break;
      total += bytesRead;
      if (total >= buf.length) break;
    }
    if (total > maxBytes) return { ok: false, reason: 'too-large', detail: `over the ${maxBytes}-byte limit` };
    return { ok: true, bytes: buf.subarray(0, total) };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return { ok: false, reason: 'missing', detail: 'does not exist' };
    if (code === 'EISDIR') return { ok: false, reason: 'not-a-file', detail: 'is a directory' };
    return { ok: false, reason: 'unreadable', detail: code ?? String(err) };
  } finally {
    await handle?.close().catch(() => undefined);
  }
}
