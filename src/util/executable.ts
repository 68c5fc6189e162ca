import { constants as fsConstants, promises as fs } from 'node:fs';
import path from 'node:path';

// The one answer to "can this process run that file?", and the PATH search built on it. What runs is what exec(2)
// would run:
// - Links are followed (stat): a link to an executable file counts; a dangling link, a path through a missing or
//   unreadable directory, or a loop is absent, as for os.path.exists.
// - It must be a regular file: a directory passes access(X_OK) for root, and exec refuses it.
// - Executable means access(X_OK), which the kernel answers for the real user and group ids, with ACLs and noexec
//   mounts taken into account. The agent is never set-uid or set-gid, so those are the effective ids exec checks.
//   For root a regular file needs at least one execute bit, as for exec; any other user needs the bit of the class
//   (owner, group, other) it falls in.
// - PATH is searched as execvp searches it, with one difference: an empty element, which execvp reads as the working
//   directory, is skipped; a program is never looked for wherever the process happens to be. A name holding "/" is
//   the file itself, not searched. Without PATH, the search path is execvp's default, so a name found here is the
//   program a spawn of that name starts.

/** Where a name is searched when the environment has no PATH: what spawn (execvp) searches then. */
export const DEFAULT_SEARCH_PATH = '/usr/bin:/bin';

export type ExecutableStatus =
  | { readonly kind: 'executable' }
  /** Missing, a dangling link, or not reachable. */
  | { readonly kind: 'absent' }
  /** A directory, a device, a socket... */
  | { readonly kind: 'not-a-file' }
  | { readonly kind: 'not-executable'; readonly mode: number };

export async function executableStatus(file: string): Promise<ExecutableStatus> {
  let mode: number;
  try {
    const st = await fs.stat(file);
    if (!st.isFile()) return { kind: 'not-a-file' };
    mode = st.mode & 0o7777;
  } catch {
    return { kind: 'absent' };
  }
  try {
    await fs.access(file, fsConstants.X_OK);
    return { kind: 'executable' };
  } catch {
    return { kind: 'not-executable', mode };
  }
}

/** True when `file` (links followed) is a regular file this process may execute. */
export async function isExecutableFile(file: string): Promise<boolean> {
  return (await executableStatus(file)).kind === 'executable';
}

/**
 * The file a spawn of `command` would start under `env`: a name holding "/" when it is executable itself, else the
 * first executable `<dir>/<command>` of PATH. Undefined when there is none.
 */
export async function findExecutable(command: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  if (command === '') return undefined;
  if (command.includes('/')) return (await isExecutableFile(command)) ? command : undefined;
  for (const dir of (env.PATH ?? DEFAULT_SEARCH_PATH).split(':')) {
    if (dir === '') continue;
    const file = path.join(dir, command);
    if (await isExecutableFile(file)) return file;
  }
  return undefined;
}
