import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import Module, { createRequire } from 'node:module';
import path from 'node:path';
import { Script } from 'node:vm';

// The compiled form of one CommonJS file kept between runs: heat-cfntools' commands run all their code from one file
// (dist/chunks/cfn-main.cjs), and without a cache every start of cfn-init and cfn-hup compiled it again, and V8
// compiled each function it ran on first call. Here V8's code cache for the file, taken when the first run ends (so
// it holds the functions that ran, compiled), is read back by later runs. Node.js 20 has no compile cache of its own;
// Node's (module.enableCompileCache, >= 22.1) keeps what is compiled as a module loads, not what compiles as it runs,
// and left cfn-init 8.5 ms slower on Node.js 24.22 (docs/build.md). V8 checks a cache against its own version and
// flags and rejects what does not match (then it is written again); it checks only the length of the source, so the
// cache file is named by a hash of the content.
//
// The directory is the compile cache's, with its checks (usableCacheDirectory: no one but its owner can write it).
// A cache is an optimisation only: any problem with it leaves the file compiled from source, silently.

/** Loads `file` as require() would, with V8's code cache for it in `directory`; returns its module.exports. */
export function requireWithCodeCache(file: string, directory: string): unknown {
  const source = readFileSync(file, 'utf8');
  const cacheFile = path.join(directory, cacheFileName(source));
  const cachedData = readCache(cacheFile);
  const script = new Script(Module.wrap(source), { filename: file, ...(cachedData ? { cachedData } : {}) });
  if (cachedData === undefined || script.cachedDataRejected === true)
    process.once('exit', () => writeCache(cacheFile, script));
  const module = { exports: {} as unknown };
  const run = script.runInThisContext() as (
    exports: unknown,
    require: NodeJS.Require,
    module: { exports: unknown },
    filename: string,
    dirname: string,
  ) => void;
  run.call(module.exports, module.exports, createRequire(file), module, file, path.dirname(file));
  return module.exports;
}

/** Named by Node's version and architecture and the source's hash: one file per build and runtime. */
function cacheFileName(source: string): string {
  const hash = createHash('sha256').update(source).digest('hex').slice(0, 32);
  return `code-${process.version}-${process.arch}-${hash}.bin`;
}

function readCache(file: string): Buffer | undefined {
  try {
    return readFileSync(file);
  } catch {
    return undefined;
  }
}

/**
 * Written whole or not at all (a temp file renamed over it): a run never reads half a cache. The caches of earlier
 * builds and runtimes go, so that upgrades do not pile them up.
 */
function writeCache(file: string, script: Script): void {
  const temp = `${file}.tmp-${process.pid}`;
  try {
    writeFileSync(temp, script.createCachedData(), { mode: 0o644, flag: 'wx' });
    renameSync(temp, file);
  } catch {
    removeQuietly(temp);
    return;
  }
  const directory = path.dirname(file);
  let names: string[];
  try {
    names = readdirSync(directory);
  } catch {
    return;
  }
  for (const name of names) {
    if (/^code-.*\.bin$/.test(name) && name !== path.basename(file)) removeQuietly(path.join(directory, name));
  }
}

function removeQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // Never made, or gone already.
  }
}
