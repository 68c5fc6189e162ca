import { chmodSync, mkdirSync, readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import t from 'tap';
import { consoleLine } from '../../src/state/console-line.js';
import { runDeployments } from '../../src/deploy/dispatch.js';
import type { DeploymentRecord } from '../../src/state/store.js';
import { deployHarness, deployment, installHooks } from '../helpers/deploy-fixtures.js';
import { startSignalSink } from '../helpers/signal-sink.js';

// [agent] console: a plain file stands for /dev/console.

t.test('one line per state change, with the status code once known; no inputs or secrets', async (t) => {
  const root = t.testdir();
  installHooks(root);
  const sink = await startSignalSink();
  t.teardown(() => sink.close());
  const h = await deployHarness(root, { agent: { console: '/console.log' } });
  const d = deployment({
    id: 'c1',
    name: 'web',
    config: { exit: 2 },
    inputs: [{ name: 'db_password', value: 'hunter2-secret' }],
    signal: sink.inputs('CFN_SIGNAL', 'c1', 'web'),
  });
  await runDeployments(h.ctx([d]));
  const text = readFileSync(path.join(root, 'console.log'), 'utf8');
  t.equal(
    text,
    [
      'os-config-agent: deployment web (c1) new -> pending',
      'os-config-agent: deployment web (c1) pending -> running',
      'os-config-agent: deployment web (c1) running -> done [status 2]',
      'os-config-agent: deployment web (c1) done -> signalled [status 2]',
      '',
    ].join('\n'),
  );
  t.notMatch(text, /hunter2|Signature/);
});

t.test('a console that cannot be opened: the pass goes on, logged once', async (t) => {
  const root = t.testdir();
  installHooks(root);
  mkdirSync(path.join(root, 'ro'));
  chmodSync(path.join(root, 'ro'), 0o500);
  const fifo = path.join(root, 'fifo');
  execFileSync('mkfifo', [fifo]);
  for (const consolePath of ['/ro/missing-dir/console', '/fifo']) {
    const h = await deployHarness(root, { agent: { console: consolePath } });
    const report = await runDeployments(
      h.ctx([deployment({ id: `x${consolePath.length}` }), deployment({ id: `y${consolePath.length}` })]),
    );
    t.equal(report.ran.length, 2, `${consolePath}: both deployments ran`);
    const warnings = h.captured.lines.filter(
      (l) => l.msg === 'console line not written; later failures are not logged',
    );
    t.equal(warnings.length, 1, `${consolePath}: logged once`);
  }
});

t.test('control characters in a name cannot forge a second line', async (t) => {
  const record = {
    id: 'i',
    name: 'evil\nos-config-agent: deployment fake',
    state: 'running',
  } as unknown as DeploymentRecord;
  t.equal(
    consoleLine(record, 'pending'),
    'os-config-agent: deployment evil?os-config-agent: deployment fake (i) pending -> running',
  );
});
