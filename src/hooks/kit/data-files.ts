import { rm } from 'node:fs/promises';
import path from 'node:path';
import { errorMessage } from '../../errors.js';
import { stageFileAtomic, syncDirectory, type StagedFile } from '../../util/atomic-write.js';
import { ExactNumber } from '../../util/exact-number.js';
import { keysInOrder } from '../../util/json-key-order.js';
import { formatNumber } from '../../util/python-json.js';
import { resolveWriteTarget, TargetRefused } from '../../util/write-target.js';
import { HookFailure } from '../contract.js';
import { makeDirs } from './work-files.js';

// Data files a hook writes for other programs (json-file's files, hiera's configuration and data, kubelet's pod
// manifests, docker-compose's env files): JSON in the layout upstream's Python wrote, and several files replaced as
// one change, each placed by the one rule for files a deployment names (util/write-target.ts: through no link another
// user owns, and never outside the root).

export interface JsonLayout {
  readonly indent: number;
  /** Keys in sorted order (Python's sort_keys=True); otherwise in the order they came. */
  readonly sortKeys: boolean;
}

/**
 * JSON text as Python's json.dump(indent=N, separators=(',', ': ')) writes it, ensure_ascii included (DEL and every
 * character beyond ASCII as \uXXXX), so files read by programs or people used to upstream's output look the same.
 * Unsorted keys come in the deployment's own order, integer-like ones ("2", "10") included (util/json-key-order.ts).
 */
export function pythonJson(value: unknown, layout: JsonLayout): string {
  return encode(value, layout, '');
}

function encode(value: unknown, layout: JsonLayout, pad: string): string {
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    const inner = pad + ' '.repeat(layout.indent);
    return `[\n${value.map((v) => inner + encode(v, layout, inner)).join(',\n')}\n${pad}]`;
  }
  if (value instanceof ExactNumber) return value.text;
  if (value !== null && typeof value === 'object') {
    const keys = keysInOrder(value);
    if (keys.length === 0) return '{}';
    if (layout.sortKeys) keys.sort();
    const inner = pad + ' '.repeat(layout.indent);
    const record = value as Record<string, unknown>;
    return `{\n${keys.map((k) => `${inner}${asciiJson(k)}: ${encode(record[k], layout, inner)}`).join(',\n')}\n${pad}}`;
  }
  if (typeof value === 'string') return asciiJson(value);
  if (typeof value === 'number') return formatNumber(value);
  // Booleans and null; anything else (undefined) cannot come from parsed JSON, but must not vanish.
  return JSON.stringify(value) ?? 'null';
}

function asciiJson(text: string): string {
  return JSON.stringify(text).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

export interface DataFile {
  /** Where the file goes (absolute); a trusted link there is written through, as upstream's open() did. */
  readonly file: string;
  readonly content: string;
  readonly mode: number;
  readonly uid?: number;
  readonly gid?: number;
}

/**
 * Writes every file, or none: each name is resolved by the rule first (a refused one fails the hook before anything
 * is written), missing directories are made (0700, as upstream's prepare_dir), each file is staged as a temp file
 * beside its target, and only when all are staged are they renamed into place. A failure while staging (a directory
 * that cannot be written, a full disk) removes the temp files and the directories made for them, and fails the hook
 * naming the file and the cause. `root`: where every file must stay ("/" on an instance).
 */
export async function replaceDataFiles(files: readonly DataFile[], root: string): Promise<void> {
  const targets = files.map((f) => placeOf(f.file, root));
  const made: string[] = [];
  const staged: StagedFile[] = [];
  try {
    for (const [i, f] of files.entries()) {
      const target = targets[i] as string;
      try {
        await makeDirs(path.dirname(target), made);
        staged.push(
          await stageFileAtomic(target, f.content, {
            mode: f.mode,
            syncDirectory: false,
            ...(f.uid !== undefined ? { uid: f.uid } : {}),
            ...(f.gid !== undefined ? { gid: f.gid } : {}),
          }),
        );
      } catch (err) {
        throw new HookFailure(`could not write ${f.file}: ${reason(err)}; no file was changed`);
      }
    }
  } catch (err) {
    await Promise.all(staged.map((s) => s.discard()));
    // Deepest first; each was empty but for the temp files just removed.
    for (const dir of made.reverse()) await rm(dir, { recursive: true, force: true }).catch(() => undefined);
    throw err;
  }
  for (const [i, s] of staged.entries()) {
    try {
      await s.commit();
    } catch (err) {
      await Promise.all(staged.slice(i + 1).map((rest) => rest.discard()));
      const done = staged.slice(0, i).map((d) => d.target);
      throw new HookFailure(
        `could not write ${s.target}: ${reason(err)}; ${done.length ? `already replaced: ${done.join(', ')}` : 'no file was changed'}`,
      );
    }
  }
  await Promise.all([...new Set(staged.map((s) => path.dirname(s.target)))].map((dir) => syncDirectory(dir)));
}

/** Where a data file goes by the rule; a refused name fails the hook, nothing written. */
function placeOf(file: string, root: string): string {
  try {
    return resolveWriteTarget(file, { root }).file;
  } catch (err) {
    if (!(err instanceof TargetRefused)) throw err;
    throw new HookFailure(`${file} is not written: ${err.message}; no file was changed`);
  }
}

/** A system error's reason without the temp file's name, which means nothing to the operator. */
function reason(err: unknown): string {
  const message = errorMessage(err);
  const code = (err as NodeJS.ErrnoException).code;
  return code && message.startsWith(`${code}: `) ? message.replace(/, \w+ '[^']*'(?: -> '[^']*')?$/, '') : message;
}

/** Makes a directory and its missing parents (0700), as upstream's prepare_dir, where the rule allows it. */
export async function makeDataDir(dir: string, root: string): Promise<void> {
  let target: string;
  try {
    target = resolveWriteTarget(dir, { root, last: 'directory' }).file;
  } catch (err) {
    if (!(err instanceof TargetRefused)) throw err;
    throw new HookFailure(`the directory ${dir} is not made: ${err.message}`);
  }
  try {
    await makeDirs(target, []);
  } catch (err) {
    throw new HookFailure(`could not make the directory ${dir}: ${reason(err)}`);
  }
}
