import { lstatSync, readFileSync, realpathSync, statSync, type Stats } from 'node:fs';
import path from 'node:path';
import { UnsafePathError } from '../errors.js';
import { isInside } from '../util/rooted-path.js';
import type { WriteBatch } from '../util/write-batch.js';
import { linkOwnerProblem } from '../util/write-target.js';
import type { ControlSettings } from './control-file.js';

// Placing one rendered file under the output root. An existing file keeps its mode (setuid/setgid/sticky included),
// owner and group unless the control file says otherwise; a new file gets 0644 and the writer's ids. Writes go into
// the caller's WriteBatch (temp files now; flush and rename when the batch commits), a file whose bytes and attributes
// already match is left alone, and no path may leave the output root, through ".." or through a symlinked directory,
// nor pass through a link another user owns (the rule of util/write-target.ts for every file a deployment names; a
// link at the file's own name is replaced, never written through).
// Synchronous: each step is one cheap system call, which costs less than a thread-pool round trip.

export type WriteOutcome = 'written' | 'unchanged' | 'deleted' | 'skipped';

/** A checked output path and what is there now (lstat, taken once for the checks and the write). */
export interface OutputPath {
  target: string;
  existing: Stats | undefined;
}

export interface RenderedFile extends OutputPath {
  body: string;
  control: ControlSettings;
}

const NEW_FILE_MODE = 0o644;

export interface PathCheckCache {
  /** The output root as given, resolved, and with a trailing separator (one run has one root). */
  root?: { given: string; resolved: string; prefix: string };
  /** realpath of the output root, once resolved. */
  realRoot?: string;
  /** Directories already checked during this run. */
  checked: Set<string>;
  /** Directories found absent (this run will make them; nothing under them needs looking at). */
  absent: Set<string>;
}

export function newPathCheckCache(): PathCheckCache {
  return { checked: new Set(), absent: new Set() };
}

/**
 * The target of `relative` under `outputRoot`, refusing absolute paths, ".." segments, symlinked directories that
 * resolve outside the root, and a directory (or a non-directory parent) in the way. Nothing is created.
 */
export function resolveOutputPath(
  outputRoot: string,
  relative: string,
  cache: PathCheckCache = newPathCheckCache(),
): OutputPath {
  if (
    relative === '' ||
    path.isAbsolute(relative) ||
    (relative.includes('..') && relative.split(/[\\/]+/).includes('..'))
  ) {
    throw new UnsafePathError(`template path "${relative}" would leave the output root ${outputRoot}; rename it`);
  }
  if (cache.root?.given !== outputRoot) {
    const resolved = path.resolve(outputRoot);
    cache.root = { given: outputRoot, resolved, prefix: resolved.endsWith(path.sep) ? resolved : resolved + path.sep };
  }
  const { resolved: root, prefix } = cache.root;
  // With no ".." segment and not absolute, the joined path can only be the root itself ("." or "./") or below it.
  const target = path.join(root, relative);
  if (!target.startsWith(prefix) || target.length === prefix.length)
    throw new UnsafePathError(`template path "${relative}" would leave the output root ${root}; rename it`);
  // The target's directory is checked once per run; only the final name is looked at for every file in it.
  const parent = path.dirname(target);
  if (!cache.checked.has(parent) && !cache.absent.has(parent))
    checkDirectories(root, target.slice(prefix.length).split(path.sep), target, cache);
  if (cache.absent.has(parent)) return { target, existing: undefined };
  const existing = lstatOrUndefined(target);
  if (existing?.isDirectory()) throw new UnsafePathError(`${target} is a directory; remove it or rename the template`);
  return { target, existing };
}

function checkDirectories(root: string, segments: readonly string[], target: string, cache: PathCheckCache): void {
  let current = root;
  for (let i = 0; i < segments.length - 1; i++) {
    current = path.join(current, segments[i] as string);
    if (cache.checked.has(current)) continue;
    const st = cache.absent.has(current) ? undefined : lstatOrUndefined(current);
    if (!st) {
      // Missing: it and everything below it will be made by this run, inside the root.
      for (let j = i; j < segments.length - 1; j++) {
        if (j > i) current = path.join(current, segments[j] as string);
        cache.absent.add(current);
      }
      return;
    }
    if (st.isSymbolicLink()) {
      const owner = linkOwnerProblem(current, st);
      if (owner) throw new UnsafePathError(`${owner}; refusing to write ${target} through it`);
      cache.realRoot ??= realpathOr(root, root);
      const real = realpathOr(current, undefined);
      if (real === undefined || !isInside(cache.realRoot, real)) {
        throw new UnsafePathError(
          `${current} is a symlink that leads outside the output root ${root}; refusing to write ${target} through it`,
        );
      }
      if (!statSync(real).isDirectory())
        throw new UnsafePathError(`${current} is not a directory; cannot write ${target}`);
    } else if (!st.isDirectory()) {
      throw new UnsafePathError(`${current} is not a directory; cannot write ${target}`);
    }
    cache.checked.add(current);
  }
}

/**
 * Stage one rendered file in `batch` (or its deletion); nothing under the output root changes until the batch
 * commits. The caller logs the outcome.
 */
export function writeRendered(file: RenderedFile, outputRoot: string, batch: WriteBatch): WriteOutcome {
  const { target, existing, body, control } = file;
  if (!control.allowEmpty && body.length === 0) {
    if (!existing) return 'skipped';
    batch.remove(target);
    return 'deleted';
  }
  const base = baseAttributes(target, existing, outputRoot);
  // Upstream ignores `mode: 0` (it tests the mode for truth); kept so existing trees behave the same.
  const mode = control.mode || base.mode;
  const uid = control.uid ?? base.uid;
  const gid = control.gid ?? base.gid;
  if (
    existing?.isFile() &&
    (existing.mode & 0o7777) === mode &&
    (uid === undefined || existing.uid === uid) &&
    (gid === undefined || existing.gid === gid) &&
    existing.size === Buffer.byteLength(body, 'utf8') &&
    holds(target, body)
  ) {
    return 'unchanged';
  }
  // The temp file goes beside its target: a missing directory is made now (and removed again if the batch aborts).
  if (!existing) batch.ensureDirectory(path.dirname(target));
  batch.stage(target, body, { mode, uid, gid });
  return 'written';
}

function baseAttributes(
  target: string,
  existing: Stats | undefined,
  outputRoot: string,
): { mode: number; uid?: number; gid?: number } {
  if (!existing) return { mode: NEW_FILE_MODE };
  let st: Stats | undefined = existing;
  if (existing.isSymbolicLink()) {
    // Upstream takes the attributes of the link's target; only when that target is inside the output root here.
    const real = realpathOr(target, undefined);
    const realRoot = realpathOr(outputRoot, outputRoot);
    st = real !== undefined && isInside(realRoot, real) ? statSync(real) : undefined;
  }
  if (!st) return { mode: NEW_FILE_MODE };
  return { mode: st.mode & 0o7777, uid: st.uid, gid: st.gid };
}

/** realpath(3), or `fallback` when the path cannot be resolved. */
function realpathOr<T extends string | undefined>(p: string, fallback: T): string | T {
  try {
    return realpathSync.native(p);
  } catch {
    return fallback;
  }
}

/** A missing path costs no exception (there are many). */
function lstatOrUndefined(p: string): Stats | undefined {
  try {
    return lstatSync(p, { throwIfNoEntry: false });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOTDIR') return undefined;
    throw err;
  }
}

/**
 * Whether `file` (of the new body's byte length, checked by the caller) holds exactly `body`. Read as text with
 * Node's native UTF-8 read; invalid bytes would read as U+FFFD, so a body holding that character is compared as bytes.
 */
function holds(file: string, body: string): boolean {
  try {
    if (readFileSync(file, 'utf8') !== body) return false;
    return !body.includes('\ufffd') || readFileSync(file).equals(Buffer.from(body, 'utf8'));
  } catch {
    return false;
  }
}
