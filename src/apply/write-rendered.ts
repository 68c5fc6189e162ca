import { lstatSync, mkdirSync, promises as fs, readFileSync, type Stats } from 'node:fs';
import path from 'node:path';
import { UnsafePathError } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { isInside } from '../util/rooted-path.js';
import type { WriteBatch } from '../util/write-batch.js';
import type { ControlSettings } from './control-file.js';

// Placing one rendered file under the output root. An existing file keeps its mode (setuid/setgid/sticky included),
// owner and group unless the control file says otherwise; a new file gets 0644 and the writer's ids. Writes go into
// the caller's WriteBatch (temp files now; fsync and rename when the batch commits), a file whose bytes and attributes
// already match is left alone, and no path may leave the output root, through ".." or through a symlinked directory.

export type WriteOutcome = 'written' | 'unchanged' | 'deleted' | 'skipped';

export interface RenderedFile {
  /** Absolute target path (from resolveOutputPath). */
  target: string;
  body: string;
  control: ControlSettings;
}

const NEW_FILE_MODE = 0o644;

/**
 * The target of `relative` under `outputRoot`, refusing absolute paths, ".." segments, symlinked directories that
 * resolve outside the root, and a directory (or a non-directory parent) in the way. Nothing is created.
 */
export interface PathCheckCache {
  /** realpath of the output root, once resolved. */
  realRoot?: string;
  /** Directories already checked during this run. */
  checked: Set<string>;
}

export function newPathCheckCache(): PathCheckCache {
  return { checked: new Set() };
}

export async function resolveOutputPath(outputRoot: string, relative: string, cache: PathCheckCache = newPathCheckCache()): Promise<string> {
  const segments = relative.split(/[\\/]+/);
  if (relative === '' || path.isAbsolute(relative) || segments.includes('..')) {
    throw new UnsafePathError(`template path "${relative}" would leave the output root ${outputRoot}; rename it`);
  }
  const root = path.resolve(outputRoot);
  const target = path.join(root, relative);
  if (!isInside(root, target) || target === root) throw new UnsafePathError(`template path "${relative}" would leave the output root ${root}; rename it`);
  cache.realRoot ??= await fs.realpath(root).catch(() => root);
  const realRoot = cache.realRoot;
  let current = root;
  for (const segment of segments.slice(0, -1)) {
    current = path.join(current, segment);
    if (cache.checked.has(current)) continue;
    const st = lstatOrUndefined(current);
    if (!st) break;
    if (st.isSymbolicLink()) {
      const real = await fs.realpath(current).catch(() => undefined);
      if (real === undefined || !isInside(realRoot, real)) {
        throw new UnsafePathError(`${current} is a symlink that leads outside the output root ${root}; refusing to write ${target} through it`);
      }
      if (!(await fs.stat(real)).isDirectory()) throw new UnsafePathError(`${current} is not a directory; cannot write ${target}`);
    } else if (!st.isDirectory()) {
      throw new UnsafePathError(`${current} is not a directory; cannot write ${target}`);
    }
    cache.checked.add(current);
  }
  const st = lstatOrUndefined(target);
  if (st?.isDirectory()) throw new UnsafePathError(`${target} is a directory; remove it or rename the template`);
  return target;
}

/** Stage one rendered file in `batch` (or its deletion); nothing under the output root changes until the batch commits. */
export async function writeRendered(file: RenderedFile, outputRoot: string, log: Logger, batch: WriteBatch, madeDirs: Set<string> = new Set()): Promise<WriteOutcome> {
  const { target, body, control } = file;
  const existing = lstatOrUndefined(target);
  if (!control.allowEmpty && body.length === 0) {
    if (existing) {
      log.info({ path: target }, 'deleting file: empty rendering and allow_empty is false');
      batch.remove(target);
      return 'deleted';
    }
    log.info({ path: target }, 'not creating empty file: allow_empty is false');
    return 'skipped';
  }
  const base = await baseAttributes(target, existing, outputRoot);
  // Upstream ignores `mode: 0` (it tests the mode for truth); kept so existing trees behave the same.
  const mode = control.mode || base.mode;
  const uid = control.uid ?? base.uid;
  const gid = control.gid ?? base.gid;
  const data = Buffer.from(body, 'utf8');
  if (existing?.isFile() && (existing.mode & 0o7777) === mode && (uid === undefined || existing.uid === uid) && (gid === undefined || existing.gid === gid) && existing.size === data.length) {
    const current = readIfPossible(target);
    if (current?.equals(data)) return 'unchanged';
  }
  log.info({ path: target }, 'writing file');
  // Parent directories are made once per run (madeDirs): the temp file goes beside its target.
  const dir = path.dirname(target);
  if (!madeDirs.has(dir)) {
    mkdirSync(dir, { recursive: true, mode: 0o777 });
    madeDirs.add(dir);
  }
  batch.stage(target, data, { mode, uid, gid });
  return 'written';
}

async function baseAttributes(target: string, existing: Stats | undefined, outputRoot: string): Promise<{ mode: number; uid?: number; gid?: number }> {
  if (!existing) return { mode: NEW_FILE_MODE };
  let st: Stats | undefined = existing;
  if (existing.isSymbolicLink()) {
    // Upstream takes the attributes of the link's target; only when that target is inside the output root here.
    const real = await fs.realpath(target).catch(() => undefined);
    const realRoot = await fs.realpath(outputRoot).catch(() => outputRoot);
    st = real !== undefined && isInside(realRoot, real) ? await fs.stat(real) : undefined;
  }
  if (!st) return { mode: NEW_FILE_MODE };
  return { mode: st.mode & 0o7777, uid: st.uid, gid: st.gid };
}

/** Synchronous on purpose: no thread-pool round trip, and a missing path costs no exception (there are many). */
function lstatOrUndefined(p: string): Stats | undefined {
  try {
    return lstatSync(p, { throwIfNoEntry: false });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOTDIR') return undefined;
    throw err;
  }
}

/** The current bytes of a file no bigger than the new body (checked by the caller), synchronously: cheaper than a thread-pool round trip. */
function readIfPossible(file: string): Buffer | undefined {
  try {
    return readFileSync(file);
  } catch {
    return undefined;
  }
}
