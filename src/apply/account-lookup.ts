import { promises as fs } from 'node:fs';
import { startBornNeutral } from '../util/oom-score.js';

// User and group lookups for `.oac` owner/group, through the system's name service (getent: files, LDAP, sssd), as
// Python's pwd/grp modules do. Without getent, /etc/passwd and /etc/group are read. Results are cached per process.

export type AccountDb = 'passwd' | 'group';

const cache = new Map<string, number | undefined>();
const GETENT_TIMEOUT_MS = 10_000;

/**
 * The numeric id for a name (looked up by name only, as getpwnam/getgrnam) or an id (must exist, as getpwuid/getgrgid);
 * undefined when the database has no such entry.
 */
export async function lookupId(db: AccountDb, key: string | number): Promise<number | undefined> {
  const cacheKey = `${db}:${typeof key}:${key}`;
  if (cache.has(cacheKey)) return cache.get(cacheKey);
  const entries = await getent(db, String(key));
  const match = entries.find((fields) => (typeof key === 'number' ? Number(fields[2]) === key : fields[0] === key));
  const id = match ? Number(match[2]) : undefined;
  cache.set(cacheKey, id);
  return id;
}

async function getent(db: AccountDb, key: string): Promise<string[][]> {
  // child_process is loaded on the first lookup: most template trees name no owner or group.
  const { execFile } = await import('node:child_process');
  return new Promise((resolve, reject) => {
    startBornNeutral(() =>
      execFile('getent', [db, key], { timeout: GETENT_TIMEOUT_MS, encoding: 'utf8' }, (err, stdout) => {
        if (!err) {
          resolve(parseLines(stdout));
          return;
        }
        const code = (err as NodeJS.ErrnoException).code;
        // Exit status 2: no such entry.
        if ((err as { code?: unknown }).code === 2) resolve([]);
        else if (code === 'ENOENT') readDbFile(db).then(resolve, reject);
        else reject(new Error(`getent ${db} failed: ${err.message}`));
      }),
    );
  });
}

async function readDbFile(db: AccountDb): Promise<string[][]> {
  try {
    return parseLines(await fs.readFile(`/etc/${db}`, 'utf8'));
  } catch {
    return [];
  }
}

function parseLines(text: string): string[][] {
  return text
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => l.split(':'));
}
