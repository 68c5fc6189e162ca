import { readFile } from 'node:fs/promises';
import { runProcess } from '../util/process-group.js';

// A user's account for cfn-hup's runas: /etc/passwd first, then getent for accounts from another NSS source (LDAP,
// sssd). Accounts are the machine's, never under --root.

export interface UserAccount {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
  readonly home: string;
}

const GETENT_TIMEOUT_MS = 10_000;

export async function userAccount(name: string): Promise<UserAccount | undefined> {
  const fromFile = await readFile('/etc/passwd', 'utf8').then(
    (text) =>
      text
        .split('\n')
        .map((line) => entryOf(line, name))
        .find((e) => e !== undefined),
    () => undefined,
  );
  if (fromFile) return fromFile;
  const res = await runProcess({ file: 'getent', args: ['passwd', name], timeoutMs: GETENT_TIMEOUT_MS });
  return res.exitCode === 0 ? entryOf(res.stdout.split('\n')[0] ?? '', name) : undefined;
}

function entryOf(line: string, name: string): UserAccount | undefined {
  const fields = line.split(':');
  if (fields[0] !== name || fields.length < 6) return undefined;
  const uid = Number(fields[2]);
  const gid = Number(fields[3]);
  if (!Number.isInteger(uid) || !Number.isInteger(gid) || uid < 0 || gid < 0) return undefined;
  return { name, uid, gid, home: fields[5] || '/' };
}
