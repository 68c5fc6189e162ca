import { readdirSync, statSync, type Dirent } from 'node:fs';
import path from 'node:path';
import { isRegularFile } from '../util/path-kind.js';
import { TemplateError } from './apply-errors.js';

// Template discovery as os-apply-config walks its root: every file that does not end in ".oac" is a template (dot
// files included), its output path is its path relative to the root; directory symlinks are not followed, file
// symlinks are read through. A missing root means "no templates" (upstream); an unreadable root or subdirectory is an
// error here, where upstream silently skipped it and reported success. Synchronous, one readdir per directory and no
// stat per plain file: whether a template is executable is learnt when it is opened (template-source.ts).

const CONTROL_SUFFIX = '.oac';

export interface TemplateEntry {
  /** Absolute path of the template file. */
  source: string;
  /** Path relative to the template root ("etc/foo.conf"), which is also the path under the output root. */
  relative: string;
  /** The control file, when `<template>.oac` is a regular file. */
  control: string | undefined;
}

export async function discoverTemplates(root: string): Promise<TemplateEntry[]> {
  const out: TemplateEntry[] = [];
  let rootStat;
  try {
    rootStat = statSync(root);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return out;
    throw new TemplateError(`cannot read the template root ${root} (${code ?? String(err)}); check its permissions`, {
      cause: err,
    });
  }
  if (!rootStat.isDirectory())
    throw new TemplateError(
      `template root ${root} is not a directory; point -t/--templates (or [apply] templates) at the template tree`,
    );
  // Iterative walk, files of a directory before its subdirectories: deep trees cannot exhaust the stack.
  const pending: string[] = [''];
  while (pending.length > 0) {
    const rel = pending.pop() as string;
    const dir = path.join(root, rel);
    const prefix = dir.endsWith(path.sep) ? dir : dir + path.sep;
    let entries: Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch (err) {
      throw new TemplateError(
        `cannot read the template directory ${dir} (${(err as NodeJS.ErrnoException).code ?? String(err)}); check its permissions`,
        { cause: err },
      );
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const names = new Set<string>();
    for (const entry of entries) names.add(entry.name);
    const subdirs: string[] = [];
    for (const entry of entries) {
      const childRel = rel === '' ? entry.name : `${rel}/${entry.name}`;
      if (entry.isDirectory()) {
        subdirs.push(childRel);
        continue;
      }
      const source = prefix + entry.name;
      if (!isTemplateFile(entry, source) || entry.name.endsWith(CONTROL_SUFFIX)) continue;
      const controlName = entry.name + CONTROL_SUFFIX;
      const control = names.has(controlName) && isRegularFile(prefix + controlName) ? prefix + controlName : undefined;
      out.push({ source, relative: childRel, control });
    }
    // Popped last first: the subdirectories are then walked in name order.
    for (let i = subdirs.length - 1; i >= 0; i--) pending.push(subdirs[i] as string);
  }
  return out;
}

/** True for a regular file or a symlink to one; false for a symlink to a directory (skipped); other things throw. */
function isTemplateFile(entry: Dirent, abs: string): boolean {
  if (entry.isFile()) return true;
  if (entry.isSymbolicLink()) {
    const target = statSync(abs, { throwIfNoEntry: false });
    if (target?.isDirectory()) return false;
    if (!target) throw new TemplateError(`template ${abs} is a symlink to nothing; remove it or fix its target`);
    if (!target.isFile())
      throw new TemplateError(`template ${abs} is not a regular file; remove it from the template tree`);
    return true;
  }
  throw new TemplateError(`template ${abs} is not a regular file; remove it from the template tree`);
}
