import { lstatSync, readlinkSync, type Stats } from 'node:fs';
import path from 'node:path';
import { AgentError, errorMessage } from '../errors.js';

// The one rule for what the agent runs or reads as root (hooks and their directories, phase directories and their
// scripts, environment.d, heat_local and local metadata, its own state and cache directories, its lock files):
// everything on the way must be writable by nobody but root and the agent's user, or whoever can write it could make
// the agent run or believe anything. Checked for the path itself and for every directory the kernel looks a name up
// in to reach it, symbolic links followed one by one (so a link's own directory and every directory its target passes
// through count too):
//   - owned by root or the agent's user (a link too: in a shared directory, anyone may have planted it);
//   - not writable by others, and writable by its group only when that group is root's or the agent's own;
//   - a directory on the way (never the path itself) may be writable by all with the sticky bit set, as /tmp is: others
//     can add names there but not replace ours, and what is reached through it is judged on its own.
// A path that does not exist is not judged: callers treat it as absent (a hook not installed, a file not written yet).
//
// The walk calls lstat directly, not through libuv's thread pool: one lstat per path component of a local file costs
// a few microseconds made directly and ~45 µs of round trips made asynchronously, and a deployment's hook, each
// poll's local sources and each lock are judged again every time (docs/performance.md).

/** Symbolic links followed before a path is refused (the kernel's own limit). */
const MAX_LINKS = 40;
const OTHERS_WRITE = 0o002;
const GROUP_WRITE = 0o020;
const STICKY = 0o1000;

export type PathTrust =
  | { readonly kind: 'trusted' }
  | { readonly kind: 'missing' }
  /** `at` is the path (or the directory or link on the way) that breaks the rule, `problem` says how. */
  | { readonly kind: 'untrusted'; readonly at: string; readonly problem: string };

/** Something the agent would run or read as root breaks the trust rule; it is refused. */
export class UntrustedPathError extends AgentError {
  override name = 'UntrustedPathError';
  constructor(
    readonly file: string,
    readonly at: string,
    readonly problem: string,
  ) {
    super('ERR_UNTRUSTED_PATH', `${file} is not trusted: ${describeUntrusted(file, at, problem)}; ${TRUST_FIX}`);
  }
}

/** What the operator can do about an untrusted path, in every message that refuses one. */
export const TRUST_FIX =
  "make it and every directory above it owned by root (or the agent's user) and writable by no one else (chown root; chmod go-w)";

export function describeUntrusted(file: string, at: string, problem: string): string {
  return at === file ? problem : `${at} ${problem}`;
}

/**
 * Judges paths by the trust rule. One instance may judge many paths of one pass (a phase's scripts, a directory's
 * files): the directories it has found trusted are not looked at again.
 */
export class TrustCheck {
  private readonly trustedDirs = new Set<string>();
  private readonly uid = process.getuid?.() ?? 0;
  private readonly gid = process.getgid?.() ?? 0;

  /** The verdict on `target` (made absolute against the working directory). */
  judge(target: string): PathTrust {
    const pending = path.resolve(target).split('/').filter(Boolean);
    let dir = '/';
    let links = 0;
    const rootProblem = this.directory('/', pending.length > 0);
    if (rootProblem) return rootProblem;
    while (pending.length > 0) {
      const name = pending.shift() as string;
      if (name === '.') continue;
      if (name === '..') {
        dir = path.dirname(dir);
        continue;
      }
      const next = path.join(dir, name);
      const st = lstatOf(next);
      if (st === 'missing') return { kind: 'missing' };
      if (typeof st === 'string') return untrusted(next, st);
      if (st.isSymbolicLink()) {
        const owner = this.ownerProblem(st);
        if (owner) return untrusted(next, `is a symbolic link that ${owner}`);
        if (++links > MAX_LINKS) return untrusted(next, `leads through more than ${MAX_LINKS} symbolic links`);
        const to = readlinkOf(next);
        if (to === undefined) return { kind: 'missing' };
        pending.unshift(...to.split('/').filter(Boolean));
        if (path.isAbsolute(to)) dir = '/';
        continue;
      }
      const onTheWay = pending.length > 0;
      if (onTheWay && !st.isDirectory()) return { kind: 'missing' };
      const problem = st.isDirectory() ? this.directory(next, onTheWay, st) : this.problemOf(st, false);
      if (typeof problem === 'string') return untrusted(next, problem);
      if (problem) return problem;
      dir = next;
    }
    return { kind: 'trusted' };
  }

  /** Throws UntrustedPathError when `target` breaks the rule; returns whether it exists. */
  require(target: string): boolean {
    const verdict = this.judge(target);
    if (verdict.kind === 'untrusted') throw new UntrustedPathError(target, verdict.at, verdict.problem);
    return verdict.kind === 'trusted';
  }

  private directory(dir: string, onTheWay: boolean, known?: Stats): PathTrust | undefined {
    if (onTheWay && this.trustedDirs.has(dir)) return undefined;
    const st = known ?? lstatOf(dir);
    if (st === 'missing') return { kind: 'missing' };
    if (typeof st === 'string') return untrusted(dir, st);
    const problem = this.problemOf(st, onTheWay);
    if (problem) return untrusted(dir, problem);
    this.trustedDirs.add(dir);
    return undefined;
  }

  /** What breaks the rule in one file's or directory's own owner and mode. */
  private problemOf(st: Stats, onTheWay: boolean): string | undefined {
    const owner = this.ownerProblem(st);
    if (owner) return owner;
    const mode = st.mode & 0o7777;
    const shown = `(mode ${mode.toString(8).padStart(4, '0')})`;
    if (mode & OTHERS_WRITE && !(onTheWay && st.isDirectory() && mode & STICKY))
      return `is writable by others ${shown}`;
    if (mode & GROUP_WRITE && st.gid !== 0 && st.gid !== this.gid) return `is writable by group ${st.gid} ${shown}`;
    return undefined;
  }

  private ownerProblem(st: Stats): string | undefined {
    if (st.uid === 0 || st.uid === this.uid) return undefined;
    return `is owned by user ${st.uid}, not by root or the agent's user`;
  }
}

function untrusted(at: string, problem: string): PathTrust {
  return { kind: 'untrusted', at, problem };
}

/** The verdict on one path, with nothing remembered. */
export function judgePath(target: string): PathTrust {
  return new TrustCheck().judge(target);
}

/** lstat, 'missing', or why the path cannot be examined (which makes it untrusted). */
function lstatOf(p: string): Stats | string {
  try {
    return lstatSync(p);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return 'missing';
    return `cannot be examined (${errorMessage(err)})`;
  }
}

/** A link's target, or undefined when it cannot be read (it is then treated as missing). */
function readlinkOf(p: string): string | undefined {
  try {
    return readlinkSync(p);
  } catch {
    return undefined;
  }
}
