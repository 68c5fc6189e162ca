import type { Stats } from 'node:fs';
import { lstat, readlink } from 'node:fs/promises';
import path from 'node:path';
import { errorMessage, type ErrorCode } from '../../errors.js';

// Where a file named by a deployment may be written. The stack owner naming the file is root on the server anyway
// (the script hook runs anything), so any absolute path is allowed, as upstream allows it. What is refused is what
// would write somewhere other than where the name says, or where another local user steers it: relative names,
// ".." segments, and symbolic links (on the way or at the end) owned by anyone but root or the agent's own user, the
// rule the kernel's fs.protected_symlinks applies in shared directories.

/** Why a name cannot be written; the hook reports it with the name. */
export class TargetRefused extends Error {
  readonly code = 'ERR_TARGET_REFUSED' satisfies ErrorCode;
  constructor(message: string) {
    super(message);
    this.name = 'TargetRefused';
  }
}

/** The checked place to write: `file` with its trusted links resolved, and the file now there (its mode and owner). */
export interface FileTarget {
  readonly file: string;
  readonly existing?: Stats;
}

/** Refuses a name that is not a plain absolute file path (the text the deployment gave). */
export function checkName(name: string): void {
  if (name === '' || name.includes('\0')) throw new TargetRefused('not a file name');
  if (!path.isAbsolute(name)) throw new TargetRefused('not an absolute path');
  if (name.split('/').includes('..')) throw new TargetRefused('has a ".." segment');
  if (name.endsWith('/') || path.basename(name) === '.' || path.normalize(name) === '/')
    throw new TargetRefused('names a directory, not a file');
}

/** Symbolic links followed for one name before it is refused (the kernel's own limit). */
const MAX_LINKS = 40;

/**
 * Walks `file` (absolute, normalised) from "/", following only trusted links (each link its targets pass through is
 * checked too); refuses anything but a regular file or nothing at the end.
 */
export async function resolveTarget(file: string, links = 0): Promise<FileTarget> {
  if (links > MAX_LINKS) throw new TargetRefused(`more than ${MAX_LINKS} symbolic links on the way`);
  const parts = file.split('/').filter((p) => p !== '');
  const last = parts.pop();
  if (last === undefined) throw new TargetRefused('names a directory, not a file');
  let dir = '/';
  for (const [i, part] of parts.entries()) {
    const next = path.join(dir, part);
    const st = await lstatOrNull(next);
    // Missing from here on: the hook makes the directories, so no link can be on the way.
    if (st === null) return { file: path.join(next, ...parts.slice(i + 1), last) };
    if (st.isSymbolicLink()) {
      trustLink(next, st);
      return resolveTarget(path.join(await linkTarget(dir, next), ...parts.slice(i + 1), last), links + 1);
    }
    if (!st.isDirectory()) throw new TargetRefused(`${next} is not a directory`);
    dir = next;
  }
  const target = path.join(dir, last);
  const st = await lstatOrNull(target);
  if (st === null) return { file: target };
  if (st.isSymbolicLink()) {
    trustLink(target, st);
    // As upstream, a trusted link is written through: its target file gets the data, and the link stays.
    const end = await resolveTarget(await linkTarget(dir, target), links + 1);
    if (!end.existing) throw new TargetRefused(`${target} is a symbolic link to nothing`);
    return end;
  }
  if (!st.isFile())
    throw new TargetRefused(st.isDirectory() ? `${target} is a directory` : `${target} is not a regular file`);
  return { file: target, existing: st };
}

/** Where a link in `dir` points, as an absolute path. */
async function linkTarget(dir: string, link: string): Promise<string> {
  try {
    return path.resolve(dir, await readlink(link));
  } catch (err) {
    throw new TargetRefused(`${link} is a symbolic link that cannot be read (${errorMessage(err)})`);
  }
}

function trustLink(link: string, st: Stats): void {
  const me = process.getuid?.() ?? 0;
  if (st.uid !== 0 && st.uid !== me) {
    throw new TargetRefused(
      `${link} is a symbolic link owned by user ${st.uid} (only links owned by root or the agent's user are followed)`,
    );
  }
}

async function lstatOrNull(p: string): Promise<Stats | null> {
  try {
    return await lstat(p);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new TargetRefused(`${p} cannot be examined (${errorMessage(err)})`);
  }
}
