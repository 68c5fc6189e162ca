import { constants as fsConstants, promises as fs, statSync, type Dirent } from 'node:fs';
import path from 'node:path';
import { TemplateError } from './apply-errors.js';

// Template discovery as os-apply-config walks its root: every file that does not end in ".oac" is a template (dot
// files included), its output path is its path relative to the root; directory symlinks are not followed, file
// symlinks are read through. A missing root means "no templates" (upstream); an unreadable root or subdirectory is an
// error here, where upstream silently skipped it and reported success.

export const CONTROL_SUFFIX = '.oac';

export interface TemplateEntry {
  /** Absolute path of the template file. */
  source: string;
  /** Path relative to the template root ("etc/foo.conf"), which is also the path under the output root. */
  relative: string;
  /** The control file, when `<template>.oac` is a regular file. */
  control: string | undefined;
  /** Executable templates are run (metadata JSON on stdin, stdout is the body) instead of rendered. */
  executable: boolean;
}

export async function discoverTemplates(root: string): Promise<TemplateEntry[]> {
  const out: TemplateEntry[] = [];
  try {
    const st = await fs.stat(root);
    if (!st.isDirectory()) throw new TemplateError(`template root ${root} is not a directory; point -t/--templates (or [apply] templates) at the template tree`);
  } catch (err) {
    if (err instanceof TemplateError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return out;
    throw new TemplateError(`cannot read the template root ${root} (${code ?? String(err)}); check its permissions`, { cause: err });
  }
  // Iterative walk: deep trees cannot exhaust the stack.
  const pending: string[] = [''];
  while (pending.length > 0) {
    const rel = pending.shift() as string;
    const dir = path.join(root, rel);
    let entries: Dirent[];
    try {
      entries = await fs.readdir(dir, { withFileTypes: true });
    } catch (err) {
      throw new TemplateError(`cannot read the template directory ${dir} (${(err as NodeJS.ErrnoException).code ?? String(err)}); check its permissions`, { cause: err });
    }
    const names = new Set(entries.map((e) => e.name));
    const subdirs: string[] = [];
    const files: Dirent[] = [];
    for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      if (entry.isDirectory()) subdirs.push(rel === '' ? entry.name : path.join(rel, entry.name));
      else files.push(entry);
    }
    // The checks of one directory's files run together (each is a filesystem round trip).
    const found = await Promise.all(files.map((entry) => describeFile(root, rel, dir, entry, names)));
    for (const f of found) if (f) out.push(f);
    pending.unshift(...subdirs);
  }
  return out;
}

async function describeFile(root: string, rel: string, dir: string, entry: Dirent, names: Set<string>): Promise<TemplateEntry | undefined> {
  const childRel = rel === '' ? entry.name : path.join(rel, entry.name);
  const abs = path.join(root, childRel);
  if (entry.isSymbolicLink()) {
    const target = await fs.stat(abs).catch(() => undefined);
    if (target?.isDirectory()) return undefined;
    if (!target) throw new TemplateError(`template ${abs} is a symlink to nothing; remove it or fix its target`);
    if (!target.isFile()) throw new TemplateError(`template ${abs} is not a regular file; remove it from the template tree`);
  } else if (!entry.isFile()) {
    throw new TemplateError(`template ${abs} is not a regular file; remove it from the template tree`);
  }
  if (entry.name.endsWith(CONTROL_SUFFIX)) return undefined;
  const controlName = entry.name + CONTROL_SUFFIX;
  const [hasControl, executable] = await Promise.all([names.has(controlName) ? isRegularFile(path.join(dir, controlName)) : false, isExecutable(abs)]);
  return { source: abs, relative: childRel, control: hasControl ? path.join(dir, controlName) : undefined, executable };
}

async function isRegularFile(file: string): Promise<boolean> {
  try {
    return (await fs.stat(file)).isFile();
  } catch {
    return false;
  }
}

async function isExecutable(file: string): Promise<boolean> {
  // Most templates have no execute bit at all: the mode says so without access(2) failing (and throwing) for each.
  const st = statSync(file, { throwIfNoEntry: false });
  if (!st || (st.mode & 0o111) === 0) return false;
  try {
    await fs.access(file, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}
