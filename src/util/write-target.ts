import { lstatSync, readlinkSync, realpathSync, type Stats } from 'node:fs';
import path from 'node:path';
import { errorMessage, type ErrorCode } from '../errors.js';
import { isInside, staysInside } from './rooted-path.js';

// The one rule for writing a file a deployment names (json-file's files, hiera's configuration and data, kubelet's
// manifests, docker-compose's env files, cfn-init's files, sources and working directories): the name is walked from
// the root it must stay in (the instance's "/", or --root), one component at a time, the way the kernel resolves it.
// A symbolic link on the way is followed only when it is owned by root or the agent's user (the rule the kernel's
// fs.protected_symlinks applies in shared directories) and only while it leads to a place inside the root; anything
// else is refused before a byte is written. The stack owner naming the file is root on the server anyway (the script
// hook runs anything), so any place inside the root may be written; what is refused is what would write somewhere
// other than where the name says, or where another local user steers it. The walk calls lstat directly, as the trust
// rule's does (trust.ts): cfn-init walks every file of its metadata.

/** Why a name cannot be written; the hook reports it with the name. */
export class TargetRefused extends Error {
  readonly code = 'ERR_TARGET_REFUSED' satisfies ErrorCode;
  constructor(message: string) {
    super(message);
    this.name = 'TargetRefused';
  }
}

export interface WriteTarget {
  /** Where the data goes: the name with its links resolved. */
  readonly file: string;
  /** What is there now (lstat): absent for a new file; a link only when `last` is 'replace'. */
  readonly existing?: Stats;
}

export interface TargetOptions {
  /** The directory nothing may be written outside of ("/" on an instance; the project directory for env files). */
  readonly root: string;
  /**
   * What the name is: 'file' (default), whose trusted link at the end is written through, as upstream's open() did;
   * 'replace', a file whose link at the end is replaced rather than followed (an atomic rename, as cfn-init does);
   * 'directory', followed to the end and a directory there (or nothing yet).
   */
  readonly last?: 'file' | 'replace' | 'directory';
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

/** Resolves `file` (a path inside `options.root`) by the rule, or throws TargetRefused. Nothing is created. */
export function resolveWriteTarget(file: string, options: TargetOptions): WriteTarget {
  const root = path.resolve(options.root);
  const last = options.last ?? 'file';
  const name = path.relative(root, path.resolve(file));
  if (!staysInside(name)) throw new TargetRefused(`is outside ${root}`);
  let realRoot: string;
  try {
    realRoot = realpathSync(root);
  } catch (err) {
    throw new TargetRefused(`${root} cannot be resolved (${errorMessage(err)})`);
  }
  const walk = new Walk(realRoot, name.split('/'), last);
  return walk.run();
}

/** One resolution: where it is, what is left of the name, and how many links it followed. */
class Walk {
  private dir: string;
  private links = 0;
  /** The link the last component was, once followed: nothing at its end makes it a link to nothing. */
  private lastLink: string | undefined;

  constructor(
    private readonly realRoot: string,
    private readonly pending: string[],
    private readonly last: 'file' | 'replace' | 'directory',
  ) {
    this.dir = realRoot;
  }

  run(): WriteTarget {
    while (this.pending.length > 0) {
      const name = this.pending.shift() as string;
      if (name === '' || name === '.') continue;
      if (name === '..') {
        this.dir = path.dirname(this.dir);
        continue;
      }
      // A single component (the split name has no "/", and "" "." ".." are taken above) under a resolved directory.
      const next = this.dir === '/' ? `/${name}` : `${this.dir}/${name}`;
      const atEnd = this.pending.every((p) => p === '' || p === '.');
      const st = lstatOrNull(next);
      if (st === null) return this.missing(next);
      if (st.isSymbolicLink() && !(atEnd && this.last === 'replace')) {
        this.follow(next, st, atEnd);
        continue;
      }
      if (!atEnd) {
        if (!st.isDirectory()) throw new TargetRefused(`${next} is not a directory`);
        this.dir = next;
        continue;
      }
      return this.end(next, st);
    }
    if (this.last === 'directory') return { file: this.inside(this.dir) };
    throw new TargetRefused('names a directory, not a file');
  }

  /** Nothing at `next`: the rest of the name is made by the writer, so no link can be on the way from here. */
  private missing(next: string): WriteTarget {
    if (this.lastLink !== undefined) throw new TargetRefused(`${this.lastLink} is a symbolic link to nothing`);
    const rest = this.pending.filter((p) => p !== '' && p !== '.');
    if (rest.includes('..')) throw new TargetRefused(`${next} does not exist, so ".." after it leads nowhere`);
    return { file: this.inside(path.join(next, ...rest)) };
  }

  private follow(link: string, st: Stats, atEnd: boolean): void {
    if (!isInside(this.realRoot, link)) throw new TargetRefused(`${link} is outside ${this.realRoot}`);
    const owner = linkOwnerProblem(link, st);
    if (owner) throw new TargetRefused(owner);
    if (++this.links > MAX_LINKS) throw new TargetRefused(`more than ${MAX_LINKS} symbolic links on the way`);
    let text: string;
    try {
      text = readlinkSync(link);
    } catch (err) {
      throw new TargetRefused(`${link} is a symbolic link that cannot be read (${errorMessage(err)})`);
    }
    if (atEnd) this.lastLink ??= link;
    if (path.isAbsolute(text)) this.dir = '/';
    this.pending.unshift(...text.split('/'));
    const target = path.resolve(path.dirname(link), text);
    if (!isInside(this.realRoot, target))
      throw new TargetRefused(`${link} is a symbolic link to ${target}, outside ${this.realRoot}`);
  }

  private end(target: string, st: Stats): WriteTarget {
    this.inside(target);
    if (this.last === 'directory') {
      if (!st.isDirectory()) throw new TargetRefused(`${target} is not a directory`);
      return { file: target, existing: st };
    }
    if (st.isSymbolicLink()) return { file: target, existing: st };
    if (st.isDirectory()) throw new TargetRefused(`${target} is a directory`);
    if (!st.isFile()) throw new TargetRefused(`${target} is not a regular file`);
    return { file: target, existing: st };
  }

  private inside(p: string): string {
    if (!isInside(this.realRoot, p)) throw new TargetRefused(`leads to ${p}, outside ${this.realRoot}`);
    return p;
  }
}

/**
 * Why a symbolic link must not be followed to write a file (os-apply-config's output tree checks its links by this
 * too): owned by anyone but root or the agent's user, it may have been planted by another local user.
 */
export function linkOwnerProblem(link: string, st: Stats): string | undefined {
  const me = process.getuid?.() ?? 0;
  if (st.uid === 0 || st.uid === me) return undefined;
  return `${link} is a symbolic link owned by user ${st.uid} (only links owned by root or the agent's user are followed)`;
}

function lstatOrNull(p: string): Stats | null {
  try {
    // Without an error for a name that is not there (the last component of every new file): building one costs
    // more than the lstat.
    return lstatSync(p, { throwIfNoEntry: false }) ?? null;
  } catch (err) {
    throw new TargetRefused(`${p} cannot be examined (${errorMessage(err)})`);
  }
}
