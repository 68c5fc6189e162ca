import { promises as fs } from 'node:fs';
import path from 'node:path';
import { SourceUnavailableError } from '../errors.js';
import { SteadyConditions } from '../log/steady-conditions.js';
import { JsonFileMemo } from '../util/json-file-memo.js';
import { isSafeFileName } from '../util/safe-name.js';
import { TrustCheck, type PathTrust } from '../util/trust.js';
import { untrustedSource } from './source-error.js';
import { resultOfRead, type LastRead, type ReadFile } from './last-read.js';
import type { CollectContext, CollectedPair, Collector, CollectResult } from './types.js';

// `local`: every non-hidden regular file directly inside each configured directory is one pair, keyed by its file
// name (extension included, so 10-base.json is cached as 10-base.json.json), all directories sorted together by
// byte order. A directory or file the trust rule refuses (util/trust.ts: owned by another user, or writable by
// others, itself or a directory above it) makes the whole source unavailable: anyone could inject configuration.
// Differences from upstream: the directories above count too, a directory owned by root is trusted as one owned by
// the agent's user, and a group-writable file is refused unless its group is root's or the agent's (upstream
// accepted any with a warning); entries that are neither files nor directories (FIFOs, sockets, devices) are skipped
// with a warning (upstream would block reading a FIFO); a file whose name is reserved (os_config_files, a collector's
// name) is left out and reported (ERR_RESERVED_NAME, daemon/collect-all.ts) instead of replacing the cache's file list
// or another source's document.

/**
 * What the local collector keeps across polls: the conditions it has reported (upstream logged each at every poll),
 * the files' parsed values by digest, and the last poll's pairs (last-read.ts): when every file holds the same bytes,
 * those pairs are returned again, marked unchanged, and nothing is parsed.
 */
interface LocalMemory {
  conditions: SteadyConditions;
  files: JsonFileMemo;
  last: LastRead;
}

/** A pair, and the file and the digest of the bytes it came from. */
interface ReadPair extends ReadFile {
  readonly pair: CollectedPair;
}

export const localCollector: Collector<LocalMemory> = {
  name: 'local',
  watchPaths: (config) => config.local.path,
  async collect(ctx: CollectContext<LocalMemory>): Promise<CollectResult> {
    const conditions = (ctx.memory.conditions ??= new SteadyConditions());
    const memo = (ctx.memory.files ??= new JsonFileMemo());
    let read: ReadPair[];
    try {
      read = await collectLocal(ctx, conditions, memo);
      conditions.endPass();
    } catch (err) {
      conditions.abandonPass();
      ctx.memory.last = undefined;
      throw err;
    }
    memo.keepOnly(new Set(read.map((r) => r.file)));
    return resultOfRead(ctx.memory, read, () => read.map((r) => r.pair));
  },
};

async function collectLocal(
  ctx: CollectContext,
  conditions: SteadyConditions,
  memo: JsonFileMemo,
): Promise<ReadPair[]> {
  const dirs = ctx.config.local.path;
  if (dirs.length === 0) throw new SourceUnavailableError('local', 'no local.path directories are configured');
  const pairs: ReadPair[] = [];
  const trust = new TrustCheck();
  for (const dir of dirs) {
    for (const name of (await entriesOf(dir, ctx, conditions, trust)) ?? []) {
      if (name.startsWith('.')) continue;
      const pair = await entryPair(dir, name, ctx, conditions, trust, memo);
      if (pair) pairs.push(pair);
    }
  }
  if (pairs.length === 0)
    conditions.hold(
      'empty',
      () => ctx.log.info({ dirs }, 'no local metadata found'),
      () => ctx.log.info({ dirs }, 'local metadata found'),
    );
  // Upstream sorts with strxfrm in the C locale: plain byte order.
  pairs.sort((a, b) => Buffer.compare(Buffer.from(a.pair.key), Buffer.from(b.pair.key)));
  return pairs;
}

/** The names in a configured directory; undefined (skipped) when it is missing; throws when it is insecure. */
async function entriesOf(
  dir: string,
  ctx: CollectContext,
  conditions: SteadyConditions,
  trust: TrustCheck,
): Promise<string[] | undefined> {
  let st;
  try {
    st = await fs.stat(dir);
  } catch {
    conditions.hold(
      `missing:${dir}`,
      () => ctx.log.warn({ dir }, 'local data directory not found; skipping'),
      () => ctx.log.info({ dir }, 'local data directory found'),
    );
    return undefined;
  }
  if (!st.isDirectory()) {
    conditions.hold(
      `not-dir:${dir}`,
      () => ctx.log.warn({ dir }, 'local data path is not a directory; skipping'),
      () => ctx.log.info({ dir }, 'local data path is no longer a non-directory'),
    );
    return undefined;
  }
  refuseUntrusted(dir, trust.judge(dir));
  try {
    return await fs.readdir(dir);
  } catch (err) {
    // The directory vanished or became unreadable between stat and readdir.
    ctx.log.warn(
      { dir, reason: (err as NodeJS.ErrnoException).code },
      'local data directory could not be listed; skipping',
    );
    return undefined;
  }
}

/** One entry's pair; undefined for what is skipped (directories, gone, not a file, unusable name). */
async function entryPair(
  dir: string,
  name: string,
  ctx: CollectContext,
  conditions: SteadyConditions,
  trust: TrustCheck,
  memo: JsonFileMemo,
): Promise<ReadPair | undefined> {
  const file = path.join(dir, name);
  let fst;
  try {
    fst = await fs.stat(file);
  } catch {
    return undefined; // removed mid-scan
  }
  if (fst.isDirectory()) return undefined;
  if (!fst.isFile()) {
    conditions.hold(
      `not-file:${file}`,
      () => ctx.log.warn({ file }, 'local data entry is not a regular file; skipping'),
      () => ctx.log.info({ file }, 'local data entry is gone or now a regular file'),
    );
    return undefined;
  }
  refuseUntrusted(file, trust.judge(file));
  if (!isSafeFileName(name)) {
    conditions.hold(
      `unsafe-name:${file}`,
      () => ctx.log.warn({ file }, 'local data file name cannot be a cache key; skipping'),
      () => ctx.log.info({ file }, 'local data file with an unusable name is gone'),
    );
    return undefined;
  }
  const read = await memo.read(file, ctx.config.agent.max_source_bytes);
  if (read.ok) return { pair: { key: name, value: read.value }, file, digest: read.digest };
  if (read.reason === 'missing') return undefined; // removed mid-scan
  throw new SourceUnavailableError('local', describeFailure(file, read.reason, read.detail), {
    code: 'ERR_SOURCE_INVALID_DATA',
  });
}

function refuseUntrusted(p: string, verdict: PathTrust): void {
  if (verdict.kind === 'untrusted') throw untrustedSource('local', p, verdict);
}

function describeFailure(file: string, reason: string, detail: string): string {
  switch (reason) {
    case 'invalid-json':
      return `${file} is not valid JSON (${detail}); fix or remove it`;
    case 'too-large':
      return `${file} is too large: ${detail}; shrink it or raise [agent] max_source_bytes`;
    case 'not-a-file':
      return `${file} is not a regular file (${detail})`;
    default:
      return `${file} cannot be read (${detail})`;
  }
}
