import { promises as fs } from 'node:fs';
import path from 'node:path';
import { isExecutableFile } from '../util/executable.js';

// Which entries of a phase directory dib-run-parts runs, and in which order:
// - depth 1 only; the entry must resolve to a regular file (symlinks to files count) and be executable by us
//   (util/executable.ts);
// - the name must match RUN_PARTS_REGEX (an extended regex, unanchored like grep -E) or by default consist only of
//   [0-9A-Za-z_-] — so `foo.sh`, `foo.bak` and `foo~` are silently skipped;
// - order is `LANG=C sort -n`: by leading number (no number counts as 0, so unnumbered names run first), ties by
//   byte order of the whole name.

const DEFAULT_RUN_PARTS_PATTERN = '^[0-9A-Za-z_-]+$';
/** environment.d files: dots are allowed there. */
export const ENV_FILE_PATTERN = /^[0-9A-Za-z_.-]+$/;

// POSIX bracket classes that grep -E knows and JavaScript does not.
const POSIX_CLASSES: Record<string, string> = {
  alnum: '0-9A-Za-z',
  alpha: 'A-Za-z',
  digit: '0-9',
  lower: 'a-z',
  upper: 'A-Z',
  xdigit: '0-9A-Fa-f',
  space: ' \\t\\n\\r\\f\\v',
  blank: ' \\t',
  punct: '!-\\/:-@\\[-`{-~',
};

/**
 * The name filter from RUN_PARTS_REGEX (or the default). An invalid expression selects nothing, as upstream's
 * failing grep does.
 */
export function runPartsFilter(value: string | undefined): (name: string) => boolean {
  const source =
    value === undefined || value === ''
      ? DEFAULT_RUN_PARTS_PATTERN
      : value.replace(/\[:([a-z]+):\]/g, (m, cls: string) => POSIX_CLASSES[cls] ?? m);
  try {
    const re = new RegExp(source);
    return (name) => re.test(name);
  } catch {
    return () => false;
  }
}

interface NumericKey {
  negative: boolean;
  int: string;
  frac: string;
}

/** The leading number GNU `sort -n` reads in the C locale: blanks, optional '-', digits, optional '.digits'. */
function numericKey(name: string): NumericKey {
  const m = /^[ \t]*(-?)([0-9]*)(?:\.([0-9]*))?/.exec(name);
  const int = (m?.[2] ?? '').replace(/^0+/, '');
  const frac = (m?.[3] ?? '').replace(/0+$/, '');
  // "-0" and "-" are zero, not negative.
  return { negative: m?.[1] === '-' && (int !== '' || frac !== ''), int, frac };
}

function compareMagnitude(a: NumericKey, b: NumericKey): number {
  if (a.int.length !== b.int.length) return a.int.length < b.int.length ? -1 : 1;
  if (a.int !== b.int) return a.int < b.int ? -1 : 1;
  if (a.frac !== b.frac) return a.frac < b.frac ? -1 : 1;
  return 0;
}

function compareNumeric(a: NumericKey, b: NumericKey): number {
  if (a.negative !== b.negative) return a.negative ? -1 : 1;
  const m = compareMagnitude(a, b);
  return a.negative ? -m : m;
}

/** `LANG=C sort -n` order of two names. */
export function compareRunParts(a: string, b: string): number {
  return compareNumeric(numericKey(a), numericKey(b)) || Buffer.compare(Buffer.from(a), Buffer.from(b));
}

/** Byte order (what `sort -n` gives for environment.d paths, which never start with a digit). */
export function compareBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

/** The names dib-run-parts would run from `dir`, in run order. A missing or unreadable directory has none. */
export async function selectRunParts(
  dir: string,
  filter: (name: string) => boolean = runPartsFilter(undefined),
): Promise<string[]> {
  let names: string[];
  try {
    names = await fs.readdir(dir);
  } catch {
    return [];
  }
  const candidates = names.filter((n) => !n.includes('\n') && filter(n));
  const checks = await Promise.all(candidates.map((n) => isExecutableFile(path.join(dir, n))));
  return candidates.filter((_, i) => checks[i]).sort(compareRunParts);
}
