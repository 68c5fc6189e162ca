import { readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isRegularFile } from '../util/path-kind.js';
import type { PathMapper } from '../util/rooted-path.js';

// Which config files are read, as oslo.config finds them for os-collect-config. Synchronous, as the reads of the
// files themselves: a few small files, and a short-lived command (os-apply-config, started many times per boot) then
// never starts libuv's thread pool or pays its round trips at every start.

const DEFAULT_CONFIG_FILE = '/etc/os-collect-config.conf';

export interface FoundFiles {
  /** Every file to read, in order (mapped paths). */
  readonly all: string[];
  /** The files whose contents decide a reload (upstream hashes only the config files, not directories). */
  readonly hashed: string[];
  /** A --config-file or --config-dir named on the command line that is not there. */
  readonly missing: Array<{ file: string; message: string }>;
}

export function findConfigFiles(
  configFiles: readonly string[] | undefined,
  configDirs: readonly string[] | undefined,
  paths: PathMapper,
): FoundFiles {
  const all: string[] = [];
  const missing: FoundFiles['missing'] = [];
  // oslo.config's defaults when no project is given: the first of ~/os-collect-config.conf and
  // /etc/os-collect-config.conf, and, separately, the first existing os-collect-config.conf.d in the same places.
  // --config-file replaces the default file and --config-dir the default directory, each independently.
  const searchDirs = [os.homedir(), path.dirname(DEFAULT_CONFIG_FILE)];
  const base = path.basename(DEFAULT_CONFIG_FILE);
  if (configFiles && configFiles.length > 0) {
    for (const f of configFiles) {
      const mapped = paths.map(path.resolve(f));
      if (isRegularFile(mapped)) all.push(mapped);
      else missing.push({ file: mapped, message: 'config file not found' });
    }
  } else {
    const found = searchDirs.map((dir) => paths.map(path.join(dir, base))).find((f) => isRegularFile(f));
    if (found) all.push(found);
  }
  const hashed = [...all];
  if (configDirs && configDirs.length > 0) {
    for (const dir of configDirs) {
      const mapped = paths.map(path.resolve(dir));
      const found = confFilesIn(mapped);
      if (found) all.push(...found);
      else missing.push({ file: mapped, message: 'config directory not found' });
    }
  } else {
    for (const dir of searchDirs) {
      const found = confFilesIn(paths.map(path.join(dir, `${base}.d`)));
      if (found) {
        all.push(...found);
        break;
      }
    }
  }
  return { all, hashed, missing };
}

/** The *.conf files of a directory, sorted; undefined when it is not a readable directory. */
function confFilesIn(dir: string): string[] | undefined {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return undefined;
  }
  const out: string[] = [];
  for (const name of names.filter((n) => n.endsWith('.conf')).sort()) {
    const file = path.join(dir, name);
    if (isRegularFile(file)) out.push(file);
  }
  return out;
}
