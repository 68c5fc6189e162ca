import {
  constants as fsConstants,
  closeSync,
  fchmodSync,
  fchownSync,
  fstatSync,
  lchownSync,
  mkdirSync,
  openSync,
  renameSync,
  rmdirSync,
  rmSync,
  statSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import path from 'node:path';
import { fsyncPathNow, tempPathFor } from './atomic-write.js';

// Many files replaced as one step (the rendered templates of an apply run, a cfn-init config's files and links). Every
// new body goes to a temp file beside its target, and nothing is renamed until all of them are written, so a failure
// part-way (full disk, permission) leaves every target as it was. Durability is paid once per batch, not once per
// file: the temp files' data is made durable before the first rename (when the batch is large, by one syncfs(2) per
// filesystem, coreutils `sync -f`, instead of an fsync per file, each of which costs a journal commit;
// docs/performance.md has the figures), and the renames afterwards by an fsync of each directory that holds one (the
// first commits the journal; on a journalling filesystem the others then find nothing left to do).

/** At or above this many files a batch's data is flushed with syncfs instead of fsync calls. */
export const SYNCFS_MIN_FILES = 16;
const SYNC_TIMEOUT_MS = 5 * 60_000;

export interface StageOptions {
  mode: number;
  uid?: number;
  gid?: number;
}

export type FlushMethod = 'syncfs' | 'fsync';

/** How the batch was made durable (tests and debug logs read it). */
export interface CommitReport {
  files: FlushMethod | 'none';
  directories: FlushMethod | 'none';
}

/** Runs `sync -f` on the given paths; resolves false when it cannot (no such option, no binary, timeout). */
export type SyncfsRunner = (paths: readonly string[]) => Promise<boolean>;

export class WriteBatch {
  /** Temp files and links in the order staged; a link has no data to flush (its directory's fsync keeps it). */
  private readonly staged: Array<{ temp: string; target: string; link?: true }> = [];
  private readonly removals: string[] = [];
  /** Directories this batch made, parents before children (abort removes them, commit makes their entries durable). */
  private readonly madeDirs: string[] = [];
  /** Directories known to exist (made here, or found there). */
  private readonly knownDirs = new Set<string>();
  private done = false;
  /** Whether open(2) gives a new file exactly the mode asked for (the umask may clear bits), learnt once per mode. */
  private readonly openKeepsMode = new Map<number, boolean>();

  constructor(private readonly syncfs: SyncfsRunner = runSyncfs) {}

  get size(): number {
    return this.staged.length + this.removals.length;
  }

  /**
   * Write `data` to a temp file beside `target` with the final mode and owner. Synchronous: for small files the calls
   * cost less than thread-pool round trips. When nothing needs setting after the write (no owner, and open(2) is
   * known to give this mode under the process's umask), Node's native write does open, write and close in one call;
   * otherwise the file is written through its descriptor and fchown/fchmod set owner and mode on that descriptor
   * (never by path: the directory may be writable by others, who could swap the name for a symlink meanwhile).
   */
  stage(target: string, data: string | Uint8Array, options: StageOptions): void {
    this.assertOpen();
    const temp = tempPathFor(target);
    const chown = options.uid !== undefined || options.gid !== undefined;
    if (!chown && this.openKeepsMode.get(options.mode) === true) {
      // Registered first, so abort() removes the temp file whatever fails part-way (unlinking a name never made is
      // harmless).
      this.staged.push({ temp, target });
      // The encoding must be named: Node takes its native one-call path only for strings it is told are UTF-8.
      writeFileSync(temp, data, { encoding: 'utf8', flag: 'wx', mode: options.mode });
      return;
    }
    const fd = openSync(temp, 'wx', options.mode);
    this.staged.push({ temp, target });
    try {
      const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
      for (let off = 0; off < bytes.length;) off += writeSync(fd, bytes, off, bytes.length - off);
      // chown before chmod: chown clears the setuid and setgid bits.
      if (chown) fchownSync(fd, options.uid ?? -1, options.gid ?? -1);
      if (chown || !this.modeKeptByOpen(fd, options.mode)) fchmodSync(fd, options.mode);
    } finally {
      closeSync(fd);
    }
  }

  /**
   * A symbolic link to `linkTarget` at a temp name beside `target`, with the owner given (lchown: the link itself,
   * never what it points to), renamed over `target` at commit like a staged file.
   */
  stageLink(target: string, linkTarget: string, owner: Omit<StageOptions, 'mode'> = {}): void {
    this.assertOpen();
    const temp = tempPathFor(target);
    this.staged.push({ temp, target, link: true });
    symlinkSync(linkTarget, temp);
    if (owner.uid !== undefined || owner.gid !== undefined) lchownSync(temp, owner.uid ?? -1, owner.gid ?? -1);
  }

  /**
   * A temp file beside `target` written by `write`, which creates it itself, exclusively (the HTTP client's download
   * does), for a body too large to hold in memory; then given the final mode and owner through a descriptor opened
   * without following a link. Resolves with the temp file's name.
   */
  async stageFrom(target: string, write: (temp: string) => Promise<void>, options: StageOptions): Promise<string> {
    this.assertOpen();
    const temp = tempPathFor(target);
    // Registered first, so abort() removes whatever `write` left when it fails part-way.
    this.staged.push({ temp, target });
    await write(temp);
    const fd = openSync(temp, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW);
    try {
      // chown before chmod: chown clears the setuid and setgid bits.
      if (options.uid !== undefined || options.gid !== undefined) fchownSync(fd, options.uid ?? -1, options.gid ?? -1);
      fchmodSync(fd, options.mode);
    } finally {
      closeSync(fd);
    }
    return temp;
  }

  /** Takes back what was staged for `target`: its temp file is removed, and nothing is renamed over `target`. */
  unstage(target: string): void {
    this.assertOpen();
    const at = this.staged.findIndex((s) => s.target === target);
    const [entry] = at < 0 ? [] : this.staged.splice(at, 1);
    if (entry) rmSync(entry.temp, { force: true });
  }

  /** True when `fd`, just created with `mode`, has exactly that mode; asked of the first file of each mode only. */
  private modeKeptByOpen(fd: number, mode: number): boolean {
    // Bits beyond rwx (setuid, setgid, sticky) are always set explicitly.
    if (mode > 0o777) return false;
    let kept = this.openKeepsMode.get(mode);
    if (kept === undefined) {
      kept = (fstatSync(fd).mode & 0o7777) === mode;
      this.openKeepsMode.set(mode, kept);
    }
    return kept;
  }

  /** Make `dir` and any missing parents (mode 0777 less the umask, as upstream), remembering what was made. */
  ensureDirectory(dir: string): void {
    this.assertOpen();
    if (this.knownDirs.has(dir)) return;
    const first = mkdirSync(dir, { recursive: true, mode: 0o777 });
    if (first !== undefined) {
      const made: string[] = [];
      for (let d = dir; ; d = path.dirname(d)) {
        made.push(d);
        if (d === first || d === path.dirname(d)) break;
      }
      this.madeDirs.push(...made.reverse());
    }
    this.knownDirs.add(dir);
  }

  /** Delete `target` when the batch commits. */
  remove(target: string): void {
    this.assertOpen();
    this.removals.push(target);
  }

  /** Make the staged data durable, rename every temp file over its target, delete the removals, make that durable. */
  async commit(): Promise<CommitReport> {
    this.assertOpen();
    this.done = true;
    const report: CommitReport = { files: 'none', directories: 'none' };
    if (this.size === 0) return report;
    let renamed = 0;
    try {
      const data = this.staged.filter((s) => !s.link).map((s) => s.temp);
      if (data.length > 0) report.files = await this.flushFiles(data);
      for (const { temp, target } of this.staged) {
        renameSync(temp, target);
        renamed++;
      }
    } catch (err) {
      this.removeTemps();
      // Before the first rename nothing is in place yet: the directories made for the temp files go too.
      if (renamed === 0) this.removeMadeDirs();
      throw err;
    }
    for (const target of this.removals) rmSync(target, { force: true });
    const dirs = new Set<string>();
    for (const { target } of this.staged) dirs.add(path.dirname(target));
    for (const target of this.removals) dirs.add(path.dirname(target));
    // A directory made by this batch is an entry in its parent: that entry must last too.
    for (const made of this.madeDirs) dirs.add(path.dirname(made));
    for (const dir of dirs) fsyncPathNow(dir);
    report.directories = 'fsync';
    return report;
  }

  /** Remove every temp file and every directory this batch made; nothing is renamed or deleted. */
  abort(): void {
    if (this.done) return;
    this.done = true;
    this.removeTemps();
    this.removeMadeDirs();
  }

  /** Remove the directories this batch made, children first. */
  private removeMadeDirs(): void {
    for (let i = this.madeDirs.length - 1; i >= 0; i--) {
      try {
        rmdirSync(this.madeDirs[i] as string);
      } catch {
        // Not empty (something else wrote there meanwhile) or already gone: left as it is.
      }
    }
  }

  /** Make the data of the staged files durable: one syncfs per filesystem for a large batch, else fsync each. */
  private async flushFiles(files: readonly string[]): Promise<FlushMethod> {
    if (files.length >= SYNCFS_MIN_FILES) {
      const dirs = new Set<string>();
      for (const f of files) dirs.add(path.dirname(f));
      if (await this.syncfs(onePerFilesystem([...dirs]))) return 'syncfs';
    }
    for (const f of files) fsyncPathNow(f);
    return 'fsync';
  }

  private removeTemps(): void {
    for (const { temp } of this.staged) {
      try {
        unlinkSync(temp);
      } catch {
        // Already renamed, or never created.
      }
    }
  }

  private assertOpen(): void {
    if (this.done) throw new Error('write batch already committed or aborted');
  }
}

/** One of `dirs` per filesystem they are on (syncfs flushes a whole filesystem). */
export function onePerFilesystem(dirs: readonly string[]): string[] {
  const byDevice = new Map<number, string>();
  for (const dir of dirs) {
    const st = statSync(dir, { throwIfNoEntry: false });
    if (st && !byDevice.has(st.dev)) byDevice.set(st.dev, dir);
  }
  return [...byDevice.values()];
}

async function runSyncfs(paths: readonly string[]): Promise<boolean> {
  if (paths.length === 0) return true;
  // Loaded here, with child_process: small batches never need it. No pipes: `sync` prints nothing worth reading, and
  // pipes would cost streams and sockets in this process.
  const { runProcess } = await import('./process-group.js');
  const result = await runProcess({
    file: 'sync',
    args: ['-f', '--', ...paths],
    stdout: 'ignore',
    stderr: 'ignore',
    timeoutMs: SYNC_TIMEOUT_MS,
  });
  return result.exitCode === 0;
}
