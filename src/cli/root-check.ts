import { statSync } from 'node:fs';

// Commands that only read (status, collect-logs) refuse a --root that is not there: a typo would otherwise read as a
// machine on which nothing has happened.

export function existingRoot(root: string | undefined): { ok: true } | { ok: false; message: string } {
  if (root === undefined) return { ok: true };
  const st = statSync(root, { throwIfNoEntry: false });
  if (st?.isDirectory()) return { ok: true };
  return { ok: false, message: `--root ${root} is not a directory; give the root the agent runs under` };
}
