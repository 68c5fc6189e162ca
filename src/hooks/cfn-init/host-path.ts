import path from 'node:path';
import { resolveWriteTarget, TargetRefused } from '../../util/write-target.js';
import { HookFailure } from '../contract.js';
import type { InitRun } from './run-state.js';

// Where a path of the metadata is on this machine: itself on an instance, under OS_CONFIG_AGENT_ROOT in tests and the
// demo, placed by the rule for files a deployment names (util/write-target.ts): ".." is refused when the metadata is
// read, and a symbolic link on the way is followed only when root or the agent's user owns it and it stays inside the
// root. A file's own name is not followed ('file': it is replaced whole, never written through a link); a source's or
// a command's directory is ('directory').

export function hostPath(run: InitRun, p: string, resource: string, kind: 'file' | 'directory'): string {
  const root = run.root || '/';
  const target = run.root ? path.join(run.root, p) : p;
  try {
    return resolveWriteTarget(target, { root, last: kind === 'file' ? 'replace' : 'directory' }).file;
  } catch (err) {
    if (!(err instanceof TargetRefused)) throw err;
    throw new HookFailure(`cfn-init: ${resource}: ${p} is refused: ${err.message}`);
  }
}
