import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { runDeployments, settleAppliedDeployments } from '../../src/deploy/dispatch.js';
import { storeFor } from '../../src/state/store.js';
import { deployHarness, deployment, installHooks } from '../helpers/deploy-fixtures.js';
import { startSignalSink } from '../helpers/signal-sink.js';

// Cost proportional to what changed: a pass and a cycle's end over deployments that are all settled write nothing
// (every state file keeps its inode, size and modification time, and no file appears), however many there are.

/** Every file under `dirs`: path -> "inode size mtime". */
function snapshot(dirs: readonly string[]): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(file);
      else {
        const s = statSync(file, { bigint: true });
        files.set(file, `${s.ino} ${s.size} ${s.mtimeNs}`);
      }
    }
  };
  for (const dir of dirs) walk(dir);
  return files;
}

t.test('a pass and a cycle end over 60 settled deployments write nothing', async (t) => {
  const root = t.testdir();
  installHooks(root, { count: {} });
  const sink = await startSignalSink();
  t.teardown(() => sink.close());
  const list = Array.from({ length: 60 }, (_, i) => {
    const id = `nc-${String(i).padStart(3, '0')}`;
    // Hook runs, os-apply-config deployments signalled at the cycle's end, and some that ask for no signal.
    const group = i % 3 === 0 ? 'count' : 'os-apply-config';
    const signal = i % 5 === 0 ? [] : sink.inputs('TEMP_URL_SIGNAL', id, id);
    return deployment({ id, name: id, group, config: {}, signal });
  });
  const h = await deployHarness(root);
  const first = await runDeployments(h.ctx(list));
  await settleAppliedDeployments(h.ctx(list), { ok: true });
  t.equal(first.ran.length, 20, 'the first pass runs every hook');
  const records = await storeFor(h.loaded.config, h.captured.log).list(true);
  t.equal(records.length, 60);
  t.ok(
    records.every((r) => ['signalled', 'done', 'skipped'].includes(r.state)),
    'every deployment settled in the first cycle',
  );

  const dirs = [h.loaded.config.agent.state_dir, h.loaded.config.deploy.deployed_dir];
  const before = snapshot(dirs);
  const again = await runDeployments(h.ctx(list));
  await settleAppliedDeployments(h.ctx(list), { ok: true });
  t.equal(again.ran.length, 0, 'nothing runs again');
  const after = snapshot(dirs);
  const changed = [...after].filter(([file, facts]) => before.get(file) !== facts).map(([file]) => file);
  // The deploy lock is the one file a pass opens for writing; it is not state.
  t.same(
    changed.filter((f) => !f.endsWith('deploy.lock')),
    [],
    'no state file written, replaced or added',
  );
  t.same(
    [...before.keys()].filter((f) => !after.has(f)),
    [],
    'none removed',
  );
});
