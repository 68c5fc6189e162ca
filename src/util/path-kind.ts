import { statSync } from 'node:fs';

// What a path names, links followed, as Python's os.path.isfile / os.path.isdir answer it: false for a missing path,
// a dangling link, or one that cannot be looked at (permissions). Synchronous: one stat costs less than a thread-pool
// round trip, and a short-lived command then never starts the pool for it.

export function isRegularFile(p: string): boolean {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

export function isDirectory(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}
