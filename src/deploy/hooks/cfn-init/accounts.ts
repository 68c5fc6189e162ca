import { readFile } from 'node:fs/promises';
import type { InitRun } from './run-state.js';
import { tool } from './run-state.js';

// Users and groups of the machine (not of OS_CONFIG_AGENT_ROOT: accounts are real system changes). /etc/passwd and
// /etc/group first, then getent for accounts from another NSS source (LDAP, sssd).

export type AccountKind = 'passwd' | 'group';

/** The numeric id of a user or group, or undefined when there is none of that name. */
export async function accountId(run: InitRun, kind: AccountKind, name: string): Promise<number | undefined> {
  const local = await fromFile(kind, name);
  if (local !== undefined) return local;
  const res = await tool(run, { file: 'getent', args: [kind, name] });
  return res.status === 0 ? idOf(res.stdout.split('\n')[0] ?? '', name) : undefined;
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
