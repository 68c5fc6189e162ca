import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { isInside } from '../../util/rooted-path.js';
import { HookFailure } from '../contract.js';
import type { InitRun } from './run-state.js';

// Where a path of the metadata is on this machine: itself on an instance, under OS_CONFIG_AGENT_ROOT in tests and the
// demo. Under a root, neither ".." (refused when the metadata is read) nor a symbolic link on the way may lead out of
// it: the deepest part of the path that exists must resolve inside the root.

export async function hostPath(run: InitRun, p: string, resource: string): Promise<string> {
  if (!run.root) return p;
  const target = path.join(run.root, p);
  const root = await realpath(run.root);
  let probe = target;
  for (;;) {
    try {
      const real = await realpath(probe);
      if (!isInside(root, real)) {
        throw new HookFailure(
          `cfn-init: ${resource}: ${p} leads out of ${run.root} through a symbolic link (${probe} -> ${real})`,
        );
      }
      return target;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      probe = path.dirname(probe);
    }
  }
}
