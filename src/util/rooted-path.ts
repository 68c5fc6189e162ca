import path from 'node:path';

// Every absolute path the agent touches goes through here, so `--root DIR` relocates the whole agent (tests, the
// demo, image builds) without a single real /etc or /var/lib access.
export interface PathMapper {
  /** The root prefix ('/' on a real instance). */
  readonly root: string;
  /** Map an absolute system path (e.g. /var/lib/os-collect-config) under the root; relative paths stay relative. */
  map(p: string): string;
  /** Undo map() for display: the path as the instance sees it. */
  unmap(p: string): string;
}

export function createPathMapper(root: string | undefined): PathMapper {
  const base = path.resolve(root ?? '/');
  return {
    root: base,
    map(p: string): string {
      if (!path.isAbsolute(p)) return p;
      if (base === '/') return path.normalize(p);
      const normal = path.normalize(p);
      // Already mapped (e.g. a path read back from a cache list): keep it as is.
      if (normal === base || normal.startsWith(base + path.sep)) return normal;
      // "/" itself is the root (not "<root>/"), so unmap() and equality checks see one spelling.
      return normal === path.sep ? base : path.join(base, normal);
    },
    unmap(p: string): string {
      if (base === '/') return p;
      if (p === base) return '/';
      if (p.startsWith(base + path.sep)) return p.slice(base.length);
      return p;
    },
  };
}

/** True when `child` is `parent` or lies inside it, after resolving `..` segments (no symlink resolution). */
export function isInside(parent: string, child: string): boolean {
  // Every absolute path is inside "/", the root of an instance: the usual case, and cfn-init asks it for every
  // component of every file it writes.
  if (parent === path.sep && path.isAbsolute(child)) return true;
  return staysInside(path.relative(path.resolve(parent), path.resolve(child)));
}

/** True when `rel`, a path.relative() from a parent, is the parent itself or lies inside it. */
export function staysInside(rel: string): boolean {
  // Only a leading ".." segment leaves the parent; a child named "..data" stays inside.
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}

/**
 * The variable that carries `--root` to the processes the agent starts (phase scripts, hooks), so that they place
 * their own files under it too. Set only under a root: on an instance it is absent.
 */
export const ROOT_ENV = 'OS_CONFIG_AGENT_ROOT';

/** `env` with ROOT_ENV set to the mapper's root when there is one (the same object when there is none). */
export function withRootEnv<T extends NodeJS.ProcessEnv>(env: T, paths: PathMapper): T {
  return paths.root === '/' ? env : { ...env, [ROOT_ENV]: paths.root };
}
