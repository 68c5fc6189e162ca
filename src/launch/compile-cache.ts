import { mkdirSync, statSync } from 'node:fs';
import module from 'node:module';
import path from 'node:path';

// Node's own compile cache (module.enableCompileCache, Node.js >= 22.1): the bundle's chunks are compiled once and
// the compiled code is read back by later runs of any command, as Python keeps .pyc files. Node keys the cache by
// its version, architecture and V8 flags and checks each entry against the source it was made from. Node.js 20 has
// no such cache: it compiles every run, which costs a few milliseconds of start-up (docs/build.md). heat-cfntools'
// commands keep V8's code cache of their one file themselves instead, on every Node.js (code-cache.ts), in the same
// directory.
//
// The directory: OS_CONFIG_AGENT_COMPILE_CACHE (empty: no cache; the image's and the Debian package's launchers
// default it to /var/cache/os-config-agent), else $XDG_CACHE_HOME/os-config-agent, else none. A cache is an
// optimisation only: any problem with it (no such Node feature, a directory that cannot be made or written) leaves the
// command running without one, silently, with the same output and exit code.

type EnableCompileCache = (directory: string) => unknown;

/** The directory to cache in for this environment, or undefined for none. */
export function compileCacheDirectory(env: NodeJS.ProcessEnv): string | undefined {
  const chosen = env.OS_CONFIG_AGENT_COMPILE_CACHE;
  if (chosen !== undefined) return path.isAbsolute(chosen) ? chosen : undefined;
  const xdg = env.XDG_CACHE_HOME;
  return xdg !== undefined && path.isAbsolute(xdg) ? path.join(xdg, 'os-config-agent') : undefined;
}

/**
 * The directory to cache in for this environment when it is usable (below), else undefined; undefined too under
 * NODE_DISABLE_COMPILE_CACHE=1, Node's own switch, which then turns off the cache of code-cache.ts as well.
 */
export function cacheDirectory(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.NODE_DISABLE_COMPILE_CACHE === '1') return undefined;
  const directory = compileCacheDirectory(env);
  return directory !== undefined && usableCacheDirectory(directory) ? directory : undefined;
}

/**
 * Whether `directory` may hold compiled code that this process will run: it exists (made here if only its last level
 * is missing), is a directory, and no one but its owner (this user or root) can write it. Node runs what it finds in
 * the cache, so a directory others can write would let them run code as whoever starts the agent.
 */
export function usableCacheDirectory(directory: string): boolean {
  try {
    // Only the last level: Node's recursive mkdir never returns on a path under /proc (the kernel answers ENOENT to
    // every mkdir there); the cache's parent (/var/cache, $XDG_CACHE_HOME) exists wherever a cache is wanted.
    mkdirSync(directory, { mode: 0o755 });
  } catch {
    // Already there, or cannot be made: the checks below decide.
  }
  try {
    const st = statSync(directory);
    const uid = process.getuid?.();
    return st.isDirectory() && (st.uid === uid || st.uid === 0) && (st.mode & 0o022) === 0;
  } catch {
    return false;
  }
}

/**
 * Turn Node's compile cache on for the modules loaded from now on, where this Node.js has it and a directory is set.
 * The directory used, or undefined when there is no cache.
 */
export function enableCompileCache(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const enable = (module as unknown as { enableCompileCache?: EnableCompileCache }).enableCompileCache;
  if (typeof enable !== 'function') return undefined;
  const directory = cacheDirectory(env);
  if (directory === undefined) return undefined;
  try {
    // A directory it cannot write is reported in its result, not thrown: the command then runs without a cache.
    enable(directory);
    return directory;
  } catch {
    // Defensive: a cache must never stop a command.
    return undefined;
  }
}
