import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import path from 'node:path';

/** The first executable `name` on the PATH of `env`, or undefined. */
export async function findProgram(env: NodeJS.ProcessEnv, name: string): Promise<string | undefined> {
  for (const dir of (env.PATH ?? '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin').split(':')) {
    if (!dir) continue;
    const file = path.join(dir, name);
    try {
      await access(file, constants.X_OK);
      return file;
    } catch {
      // not here
    }
  }
  return undefined;
}
