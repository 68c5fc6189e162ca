import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import type { DeploymentStatus } from '../../src/deploy/status.js';
import { runBundle as run } from '../helpers/bundle.js';
import { deployment, installHooks } from '../helpers/deploy-fixtures.js';
import { startSignalSink } from '../helpers/signal-sink.js';

// `os-config-agent status [--json]` after a real `deploy`.


t.test('status lists what deploy did, as a table and as JSON, without secrets', async (t) => {
  const root = t.testdir();
  installHooks(root);
  const sink = await startSignalSink();
  t.teardown(() => sink.close());
  const empty = await run(['status', '--root', root]);
  t.equal(empty.code, 0);
  t.match(empty.stdout, /^AGENT: not running\n/);
  t.match(empty.stdout, /^DEPLOYMENTS\nno deployments known\n/m);
  t.match(empty.stdout, /^RESULT: all done and signalled \(exit 0\)$/m);
  const file = path.join(root, 'hc.json');
  mkdirSync(root, { recursive: true });
  writeFileSync(
    file,
    JSON.stringify([
      deployment({ id: 'ok-1', name: 'web', signal: sink.inputs('HEAT_SIGNAL', 'ok-1', 'web') }),
      deployment({ id: 'bad-2', name: 'db', group: 'nothing-here', signal: sink.inputs('CFN_SIGNAL', 'bad-2', 'db') }),
    ]),
  );
  t.equal((await run(['deploy', '--root', root, '--heat-config', '/hc.json'])).code, 1);
  const table = await run(['status', '--root', root]);
  t.equal(table.code, 1, 'a deployment failed: exit 1');
  const lines = table.stdout.slice(table.stdout.indexOf('DEPLOYMENTS\n') + 'DEPLOYMENTS\n'.length).split('\n\n')[0]!.split('\n');
  t.equal(lines.length, 3);
  t.match(lines[1], /^ok-1\s+web\s+fake\s+CREATE\s+signalled\s+\S+Z\s+\S+Z\s+0\s+sent HEAT_SIGNAL\s+-$/);
  t.match(lines[2], /^bad-2\s+db\s+nothing-here\s+CREATE\s+signalled\s+-\s+\S+Z\s+127\s+sent CFN_SIGNAL\s+no hook for group "nothing-here"/);
  const json = await run(['status', '--root', root, '--json']);
  t.equal(json.code, 1);
  const report = JSON.parse(json.stdout) as { version: number; deployments: DeploymentStatus[]; result: { exitCode: number } };
  t.equal(report.version, 1);
  t.equal(report.result.exitCode, 1);
  const list = report.deployments;
  t.same(list.map((d) => [d.id, d.name, d.state, d.signal.state, d.failed]), [['ok-1', 'web', 'signalled', 'sent', false], ['bad-2', 'db', 'signalled', 'sent', true]]);
  t.notMatch(json.stdout, sink.keystone.password, 'no password');
  t.equal(json.stderr, '');
});
