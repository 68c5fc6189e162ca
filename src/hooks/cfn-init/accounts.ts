import { readFile } from 'node:fs/promises';
import type { InitRun } from './run-state.js';
import { tool } from './run-state.js';

// Users and groups of the machine (not of OS_CONFIG_AGENT_ROOT: accounts are real system changes). /etc/passwd and
// /etc/group first, then getent for accounts from another NSS source (LDAP, sssd).

export type AccountKind = 'passwd' | 'group';

/**
 * The numeric id of a user or group, or undefined when there is none of that name. Ids found are remembered for the
 * run (files owned by the same user do not read /etc/passwd each); absences are not, since users and groups are
 * created during the run.
 */
export async function accountId(run: InitRun, kind: AccountKind, name: string): Promise<number | undefined> {
  const key = `${kind}:${name}`;
  const known = run.accounts.get(key);
  if (known !== undefined) return known;
  let id = await fromFile(kind, name);
  if (id === undefined) {
    const res = await tool(run, { file: 'getent', args: [kind, name] });
    id = res.status === 0 ? idOf(res.stdout.split('\n')[0] ?? '', name) : undefined;
  }
  if (id !== undefined) run.accounts.set(key, id);
  return id;
}

async function fromFile(kind: AccountKind, name: string): Promise<number | undefined> {
  let text: string;
  try {
    text = await readFile(`/etc/${kind}`, 'utf8');
  } catch {
    return undefined;
  }
  for (const line of text.split('\n')) {
    const id = idOf(line, name);
    if (id !== undefined) return id;
  }
  return undefined;
}

function idOf(line: string, name: string): number | undefined {
  const fields = line.split(':');
  if (fields[0] !== name || fields.length < 3) return undefined;
  const id = Number(fields[2]);
  return Number.isInteger(id) && id >= 0 ? id : undefined;
}
