import { promises as fs } from 'node:fs';
import path from 'node:path';
import { CacheWriteError, ReservedNameError } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { readFileIfExists, writeFileAtomic } from '../util/atomic-write.js';
import { jsonEqual, jsonIdentical } from '../util/json-equal.js';
import { isDirectory } from '../util/path-kind.js';
import { pythonJsonDumps } from '../util/python-json.js';
import { checkFileName } from '../util/safe-name.js';
import { parsePythonJson } from '../util/python-json-parse.js';
import { processStartTicks } from '../util/process-identity.js';
import { TrustCheck, UntrustedPathError } from '../util/trust.js';
import type { StoreMemo } from './store-memo.js';

// The os-collect-config cache, file for file:
//   <key>.json        latest value (1-space indent, ASCII-escaped, no final newline), mode 0600
//   <key>.json.orig   the first value ever stored for the key
//   <key>.json.last   the last value a successful cycle committed; "changed" means differs from this
//   os_config_files.json  the cache paths of the latest changed cycle, in order
// Differences from upstream: a corrupt .last counts as "changed" instead of crashing, an unchanged value is not
// rewritten, every write is atomic with fsync, and a missing cache directory is created with its parents, mode 0700
// (upstream: one level, 0755; the files in it are 0600 either way). A cache directory the trust rule refuses
// (util/trust.ts: another user's, or writable by others, itself or a directory above it) is neither read nor written
// (ERR_UNTRUSTED_PATH): whoever could write it could mark new metadata as applied, or feed the templates.

export const META_LIST_FILE = 'os_config_files.json';
const FILE_MODE = 0o600;
const DIR_MODE = 0o700;

export interface StoreResult {
  changed: boolean;
  path: string;
}

export class MetadataCache {
  private trusted = false;

  constructor(
    readonly dir: string,
    private readonly log: Logger,
  ) {}

  pathOf(key: string): string {
    const file = `${checkFileName('cache key', key)}.json`;
    // The collectors leave such a key out (collectors/reserved-keys.ts); this keeps the list safe from any other caller.
    if (file === META_LIST_FILE)
      throw new ReservedNameError('cache', `cache key "${key}" is reserved for the file list`);
    return path.join(this.dir, file);
  }

  async ensureDir(): Promise<void> {
    try {
      await fs.mkdir(this.dir, { recursive: true, mode: DIR_MODE });
    } catch (err) {
      throw new CacheWriteError(
        `cannot create cache directory ${this.dir}: ${(err as NodeJS.ErrnoException).code ?? err}; check the path and its permissions`,
        { cause: err },
      );
    }
    this.requireTrusted();
  }

  /** Throws UntrustedPathError when the directory breaks the trust rule; found trusted once per instance (one cycle). */
  private requireTrusted(): void {
    if (this.trusted) return;
    new TrustCheck().require(this.dir);
    this.trusted = true;
  }

  /**
   * Store a value; report whether it differs from the last committed one. At almost every poll nothing changed: the
   * cache file is then compared as a parsed value (keys in order, as the file would be written), and nothing is
   * serialised or written (serialising every source every second was most of what an idle daemon allocated). With
   * the daemon's memo, the very same value (a source that said unchanged) over untouched files is not even read.
   */
  async store(key: string, value: unknown, memo?: StoreMemo): Promise<StoreResult> {
    const file = this.pathOf(key);
    let changed = false;
    let text: string | undefined;
    try {
      await this.ensureDir();
      const known = memo?.matchesLast(file, value);
      if (known !== undefined) return { changed: !known, path: file };
      text = await readFileIfExists(file);
      if (text === undefined || !holdsValue(text, value)) {
        text = pythonJsonDumps(value, { indent: 1 });
        await writeFileAtomic(file, text, { mode: FILE_MODE });
      }
      if (!(await fileExists(`${file}.orig`))) {
        await writeFileAtomic(`${file}.orig`, text, { mode: FILE_MODE });
        changed = true;
      }
    } catch (err) {
      if (err instanceof CacheWriteError || err instanceof UntrustedPathError) throw err;
      throw new CacheWriteError(
        `cannot write cache file ${file}: ${(err as NodeJS.ErrnoException).code ?? err}; the last good cache is kept`,
        { cause: err },
      );
    }
    if (changed) memo?.forget(file);
    else {
      const matched = await this.matchesLast(key, file, value, text);
      memo?.remember(file, value, matched);
      changed = !matched;
    }
    return { changed, path: file };
  }

  /** Whether the last committed value of a key equals `value` (whose cache file holds `text`). */
  private async matchesLast(key: string, file: string, value: unknown, text: string): Promise<boolean> {
    const last = await readFileIfExists(`${file}.last`).catch(() => undefined);
    if (last === undefined) return false;
    // A commit copies the cache file byte for byte, so an unchanged key has the same text in both.
    if (last === text) return true;
    try {
      return jsonEqual(parsePythonJson(last), value);
    } catch {
      this.log.warn(
        { code: 'ERR_CACHE_CORRUPT', key, file: `${file}.last` },
        'committed cache file is not valid JSON; treating the key as changed',
      );
      return false;
    }
  }

  /** Mark a key's current value as applied: copy <key>.json to <key>.json.last. */
  async commit(key: string): Promise<void> {
    const file = this.pathOf(key);
    this.requireTrusted();
    try {
      const text = await readFileIfExists(file);
      if (text === undefined) return;
      await writeFileAtomic(`${file}.last`, text, { mode: FILE_MODE });
    } catch (err) {
      throw new CacheWriteError(
        `cannot commit cache file ${file}.last: ${(err as NodeJS.ErrnoException).code ?? err}`,
        { cause: err },
      );
    }
  }

  /** Write os_config_files.json: the cache paths in collection order, compact, as upstream. */
  async storeMetaList(files: readonly string[]): Promise<string> {
    const target = path.join(this.dir, META_LIST_FILE);
    this.requireTrusted();
    try {
      await writeFileAtomic(target, pythonJsonDumps(files), { mode: FILE_MODE });
    } catch (err) {
      throw new CacheWriteError(`cannot write ${target}: ${(err as NodeJS.ErrnoException).code ?? err}`, {
        cause: err,
      });
    }
    return target;
  }

  /**
   * Replace backupDir with a copy of the cache directory (taken before the command runs, as upstream). The copy is
   * built beside the target and swapped in, so a failed copy leaves the previous backup in place. Without a cache
   * directory the backup is removed, as upstream does.
   */
  async backup(backupDir: string): Promise<void> {
    const staging = `${backupDir}.tmp-${process.pid}`;
    try {
      await removeDeadStagings(backupDir);
      await fs.rm(staging, { recursive: true, force: true });
      if (!isDirectory(this.dir)) {
        await fs.rm(backupDir, { recursive: true, force: true });
        return;
      }
      await fs.mkdir(path.dirname(backupDir), { recursive: true });
      // Temp files of in-flight atomic writes start with "."; they are not part of the cache.
      await fs.cp(this.dir, staging, {
        recursive: true,
        filter: (src) => src === this.dir || !path.basename(src).startsWith('.'),
      });
      await fs.rm(backupDir, { recursive: true, force: true });
      await fs.rename(staging, backupDir);
    } catch (err) {
      await fs.rm(staging, { recursive: true, force: true }).catch(() => undefined);
      throw new CacheWriteError(
        `cannot refresh the backup cache directory ${backupDir}: ${(err as NodeJS.ErrnoException).code ?? err}`,
        { cause: err },
      );
    }
  }
}

/** Whether a cache file's text is valid JSON holding `value`, keys in the same order (a damaged file is not). */
function holdsValue(text: string, value: unknown): boolean {
  try {
    return jsonIdentical(parsePythonJson(text), value);
  } catch {
    return false;
  }
}

async function fileExists(file: string): Promise<boolean> {
  try {
    await fs.lstat(file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

/**
 * Staging copies of the backup left by processes that died while copying (a SIGKILL, a power cut): each holds a part
 * of the cache, files cut short included, and no one else would ever remove it. A live process's is left alone.
 */
async function removeDeadStagings(backupDir: string): Promise<void> {
  const prefix = `${path.basename(backupDir)}.tmp-`;
  const names = await fs.readdir(path.dirname(backupDir)).catch(() => [] as string[]);
  for (const name of names) {
    const pid = Number(name.slice(prefix.length));
    if (!name.startsWith(prefix) || !Number.isSafeInteger(pid) || pid <= 0) continue;
    // A pid /proc still shows is alive (its staging may be in use).
    if (processStartTicks(pid) !== undefined) continue;
    await fs.rm(path.join(path.dirname(backupDir), name), { recursive: true, force: true });
  }
}
