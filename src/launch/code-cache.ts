import { readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import vm from 'node:vm';

// Node 20's module loader keeps no compiled code between runs (module.enableCompileCache arrived in 22.1), so each
// start of a short-lived command parsed and compiled its bundle again: about a third of os-apply-config's start-up
// instructions. The compatibility commands, which phase scripts start many times per boot, are therefore a CommonJS
// bundle run through vm.Script with a V8 code cache beside it, as Python keeps .pyc files beside its modules: the
// build makes the cache, and a run that finds it missing or rejected by V8 (another Node.js release, other V8 flags,
// a changed bundle) writes a fresh one when it exits. V8 checks a cache against the V8 version, the flags and the
// source's *length* only: given a cache made for other source of the same length it runs that other code. So the
// cache starts with a stamp of the bundle it was made from (size and modification time, as Python's .pyc header),
// and a cache whose stamp does not match is not handed to V8 at all. A rejected or stale cache only costs the
// compile it would have saved.

export type CodeCacheState = 'accepted' | 'rejected' | 'stale' | 'absent';

const STAMP_PREFIX = 'os-config-agent code cache v1';
const MAX_STAMP_BYTES = 200;

/** The first line of a cache made from `bundle` as it is now. */
function stampOf(bundle: string): string {
  const st = statSync(bundle);
  // Whole seconds, as Python's .pyc: copies that keep times (cp -p, install -p, fs.cpSync) do not all keep the
  // sub-second part exactly.
  return `${STAMP_PREFIX} ${st.size} ${Math.floor(st.mtimeMs / 1000)}`;
}

/** The V8 data of `cacheFile` if its stamp matches, 'stale' if it does not, 'absent' if there is no cache. */
function readCache(cacheFile: string, stamp: string): Buffer | 'stale' | 'absent' {
  let raw: Buffer;
  try {
    raw = readFileSync(cacheFile);
  } catch {
    return 'absent';
  }
  const nl = raw.indexOf(10);
  if (nl <= 0 || nl > MAX_STAMP_BYTES || raw.toString('latin1', 0, nl) !== stamp) return 'stale';
  return raw.subarray(nl + 1);
}

export interface RunBundleResult {
  state: CodeCacheState;
  script: vm.Script;
  /** The stamp of the bundle that ran (for saveCodeCache). */
  stamp: string;
  /** What the bundle put in module.exports. */
  exports: unknown;
}

/** Run a CommonJS bundle (as require() would, with its own require, module and __filename) using its code cache. */
export function runBundle(bundle: string, cacheFile: string): RunBundleResult {
  const stamp = stampOf(bundle);
  const source = readFileSync(bundle, 'utf8');
  const cache = readCache(cacheFile, stamp);
  const cachedData = typeof cache === 'string' ? undefined : cache;
  const wrapped = `(function (exports, require, module, __filename, __dirname) {${source}\n})`;
  const script = new vm.Script(wrapped, { filename: bundle, cachedData });
  const state: CodeCacheState = typeof cache === 'string' ? cache : script.cachedDataRejected === true ? 'rejected' : 'accepted';
  const module = { exports: {} as unknown };
  const body = script.runInThisContext() as (exports: unknown, require: NodeJS.Require, module: { exports: unknown }, filename: string, dirname: string) => void;
  body.call(module.exports, module.exports, createRequire(bundle), module, bundle, path.dirname(bundle));
  return { state, script, stamp, exports: module.exports };
}

/**
 * Write the script's code cache atomically. Called at exit, so it holds every function compiled during the run, not
 * only the top level. False (and nothing left behind) where the directory is not writable: the next run compiles.
 */
export function saveCodeCache(run: Pick<RunBundleResult, 'script' | 'stamp'>, cacheFile: string): boolean {
  const tmp = `${cacheFile}.${process.pid}.tmp`;
  try {
    writeFileSync(tmp, Buffer.concat([Buffer.from(`${run.stamp}\n`, 'latin1'), run.script.createCachedData()]), { mode: 0o644 });
    renameSync(tmp, cacheFile);
    return true;
  } catch {
    try {
      unlinkSync(tmp);
    } catch {
      // Never created.
    }
    return false;
  }
}
