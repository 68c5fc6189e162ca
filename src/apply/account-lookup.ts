import { promises as fs } from 'node:fs';

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
  // Loaded on the first lookup, with child_process: most template trees name no owner or group.
  const { runProcess } = await import('../util/process-group.js');
  const result = await runProcess({ file: 'getent', args: [db, key], timeoutMs: GETENT_TIMEOUT_MS });
  if (result.spawnError?.code === 'ENOENT') return readDbFile(db);
  if (result.exitCode === 0) return parseLines(result.stdout);
  // Exit status 2: no such entry.
  if (result.exitCode === 2) return [];
  const why =
    result.spawnError?.message ??
    (result.timedOut
      ? `no answer within ${GETENT_TIMEOUT_MS / 1000} s`
      : result.signal !== null
        ? `killed by ${result.signal}`
        : `exit status ${result.exitCode}`);
  throw new Error(`getent ${db} failed: ${why}`);
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
