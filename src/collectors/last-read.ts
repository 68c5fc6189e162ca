import type { CollectedPair, CollectResult } from './types.js';

// A file source's last poll: the files it read with the digests of their bytes (util/json-file-memo.ts), and the pairs
// it made of them. A poll that read the same files with the same bytes hands those pairs back, the same objects,
// marked unchanged: the collection pass and the cache then take them as checked and verified before
// (daemon/collect-all.ts, cache/store-memo.ts).

export interface LastRead {
  readonly sources: string;
  readonly pairs: readonly CollectedPair[];
}

/** A file the source read this poll, and the digest of its bytes. */
export interface ReadFile {
  readonly file: string;
  readonly digest: string;
}

/** The result of a poll that read `files`: the last poll's pairs when it read the same, else `make()`, remembered. */
export function resultOfRead(
  memory: { last?: LastRead | undefined },
  files: readonly ReadFile[],
  make: () => CollectedPair[],
): CollectResult {
  const sources = files.map((f) => `${f.file}\0${f.digest}`).join('\n');
  if (memory.last?.sources === sources) return { pairs: memory.last.pairs, unchanged: true };
  const pairs = make();
  memory.last = { sources, pairs };
  return { pairs };
}
