import { promises as fs } from 'node:fs';
import path from 'node:path';
import { SourceUnavailableError } from '../errors.js';
import { SteadyConditions } from '../log/steady-conditions.js';
import { readJsonFile } from '../util/read-json-file.js';
import { isSafeFileName } from '../util/safe-name.js';
import type { CollectContext, CollectedPair, Collector, CollectResult } from './types.js';

// `local`: every non-hidden regular file directly inside each configured directory is one pair, keyed by its file
// name (extension included, so 10-base.json is cached as 10-base.json.json), all directories sorted together by
// byte order. Permission rules as upstream: a directory owned by another user or world-writable, or a
// world-writable file, makes the whole source unavailable (anyone could inject configuration). Group-writable files
// are accepted as upstream does, with a warning. Difference from upstream: entries that are neither files nor
// directories (FIFOs, sockets, devices) are skipped with a warning; upstream would block reading a FIFO.

const WORLD_WRITABLE = 0o002;
const GROUP_WRITABLE = 0o020;

/** What the local collector keeps across polls: the conditions it has reported (upstream logged each at every poll). */
interface LocalMemory {
  conditions: SteadyConditions;
}

export const localCollector: Collector<LocalMemory> = {
  name: 'local',
  watchPaths: (config) => config.local.path,
  async collect(ctx: CollectContext<LocalMemory>): Promise<CollectResult> {
    const conditions = (ctx.memory.conditions ??= new SteadyConditions());
    try {
      const pairs = await collectLocal(ctx, conditions);
      conditions.endPass();
      return { pairs };
    } catch (err) {
      conditions.abandonPass();
      throw err;
    }
  },
};

async function collectLocal(ctx: CollectContext, conditions: SteadyConditions): Promise<CollectedPair[]> {
  const dirs = ctx.config.local.path;
  if (dirs.length === 0) throw new SourceUnavailableError('local', 'no local.path directories are configured');
  const pairs: CollectedPair[] = [];
  for (const dir of dirs) {
    for (const name of (await entriesOf(dir, ctx, conditions)) ?? []) {
      if (name.startsWith('.')) continue;
      const pair = await entryPair(dir, name, ctx, conditions);
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
  pairs.sort((a, b) => Buffer.compare(Buffer.from(a.key), Buffer.from(b.key)));
  return pairs;
}

/** The names in a configured directory; undefined (skipped) when it is missing; throws when it is insecure. */
async function entriesOf(
  dir: string,
  ctx: CollectContext,
  conditions: SteadyConditions,
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
  const uid = process.getuid?.() ?? 0;
  if (st.uid !== uid) {
    throw new SourceUnavailableError(
      'local',
      `${dir} is owned by uid ${st.uid}, not by the agent's uid ${uid}: a security risk; fix its owner`,
      { code: 'ERR_SOURCE_INSECURE' },
    );
  }
  if (st.mode & WORLD_WRITABLE) {
    throw new SourceUnavailableError('local', `${dir} is world writable: a security risk; chmod o-w it`, {
      code: 'ERR_SOURCE_INSECURE',
    });
  }
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
): Promise<CollectedPair | undefined> {
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
  if (fst.mode & WORLD_WRITABLE) {
    throw new SourceUnavailableError('local', `${file} is world writable: a security risk; chmod o-w it`, {
      code: 'ERR_SOURCE_INSECURE',
    });
  }
  if (fst.mode & GROUP_WRITABLE) {
    conditions.hold(
      `group-writable:${file}`,
      () =>
        ctx.log.warn({ file }, 'local data file is group writable; accepted as upstream does, but consider chmod g-w'),
      () => ctx.log.info({ file }, 'local data file is gone or no longer group writable'),
    );
  }
  if (!isSafeFileName(name)) {
    conditions.hold(
      `unsafe-name:${file}`,
      () => ctx.log.warn({ file }, 'local data file name cannot be a cache key; skipping'),
      () => ctx.log.info({ file }, 'local data file with an unusable name is gone'),
    );
    return undefined;
  }
  const read = await readJsonFile(file, ctx.config.agent.max_source_bytes);
  if (read.ok) return { key: name, value: read.value };
  if (read.reason === 'missing') return undefined; // removed mid-scan
  throw new SourceUnavailableError('local', describeFailure(file, read.reason, read.detail), {
    code: 'ERR_SOURCE_INVALID_DATA',
  });
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
