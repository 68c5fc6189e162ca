import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { moveTo } from '../helpers/state-path.js';
import { enqueueSignal } from '../../src/signals/cfn-signal-queue/files.js';
import { signalQueueDir } from '../../src/state/signal-queue-paths.js';
import { storeFor } from '../../src/state/store.js';
import type { DeploymentStatus } from '../../src/status/status.js';
import { runBundle as run } from '../helpers/bundle.js';
import { deployConfig, deployment, installHooks } from '../helpers/deploy-fixtures.js';
import { captureLog } from '../helpers/log-capture.js';
import { startSignalSink } from '../helpers/signal-sink.js';

// `os-config-agent status` as the bundle: after a real `deploy`, --wait, one deployment's report, bad input.

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
  const lines = table.stdout
    .slice(table.stdout.indexOf('DEPLOYMENTS\n') + 'DEPLOYMENTS\n'.length)
    .split('\n\n')[0]!
    .split('\n');
  t.equal(lines.length, 3);
  t.match(lines[1], /^ok-1\s+web\s+fake\s+CREATE\s+signalled\s+\S+Z\s+\S+Z\s+0\s+sent HEAT_SIGNAL\s+-$/);
  t.match(
    lines[2],
    /^bad-2\s+db\s+nothing-here\s+CREATE\s+signalled\s+-\s+\S+Z\s+127\s+sent CFN_SIGNAL\s+no hook for group "nothing-here"/,
  );
  const json = await run(['status', '--root', root, '--json']);
  t.equal(json.code, 1);
  const report = JSON.parse(json.stdout) as {
    version: number;
    deployments: DeploymentStatus[];
    result: { exitCode: number };
  };
  t.equal(report.version, 1);
  t.equal(report.result.exitCode, 1);
  const list = report.deployments;
  t.same(
    list.map((d) => [d.id, d.name, d.state, d.signal.state, d.failed]),
    [
      ['ok-1', 'web', 'signalled', 'sent', false],
      ['bad-2', 'db', 'signalled', 'sent', true],
    ],
  );
  t.notMatch(json.stdout, sink.keystone.password, 'no password');
  t.equal(json.stderr, '');
});

t.test(
  'status --wait: exit 3 at the timeout, then 0 for two waiters at once once the deployment is signalled',
  async (t) => {
    const root = t.testdir();
    const loaded = await deployConfig(root);
    const store = storeFor(loaded.config, captureLog().log);
    await store.init();
    const record = await store.create({ id: 'w-1', name: 'web', group: 'script', action: 'CREATE' });
    const timedOut = await run(['status', '--root', root, '--wait', '--timeout', '0.5']);
    t.equal(timedOut.code, 3, timedOut.stderr);
    t.match(timedOut.stdout, /^RESULT: still in progress \(exit 3\)\n {2}deployment w-1 \(web\) is pending$/m);
    const waiters = [
      run(['status', '--root', root, '--wait', '--timeout', '60', '--json']),
      run(['status', '--root', root, '--wait', '--timeout', '60']),
    ];
    // Both are waiting (or about to): the deployment ends while they poll.
    await moveTo(store, record, 'signalled', {
      failed: false,
      exitCode: 0,
      signal: { state: 'sent', transport: 'CFN_SIGNAL', attempts: 1 },
    });
    const [json, text] = await Promise.all(waiters);
    t.equal(json!.code, 0, json!.stderr);
    t.equal(text!.code, 0, text!.stderr);
    t.match(JSON.parse(json!.stdout), {
      version: 1,
      result: { exitCode: 0 },
      deployments: [{ id: 'w-1', state: 'signalled' }],
    });
  },
);

t.test(
  'status <name> --wait: waits for a deployment not collected yet until it is finished; exit 3 if it never comes',
  async (t) => {
    const root = t.testdir();
    const loaded = await deployConfig(root);
    const store = storeFor(loaded.config, captureLog().log);
    await store.init();
    const never = await run(['status', '--root', root, 'web', '--wait', '--timeout', '0.5']);
    t.equal(never.code, 3, 'still waiting at the timeout, not "unknown" (exit 2)');
    t.equal(never.stdout, '');
    t.match(never.stderr, /^status: no deployment with id or name "web" is known yet$/m);
    const waiter = run(['status', '--root', root, 'web', '--wait', '--timeout', '60', '--json']);
    // As when Heat adds the deployment to the metadata after the agent's first cycle: the waiter has read (and found
    // nothing) before the record exists. A waiter that gave up on the unknown name would exit 2 here.
    await new Promise((r) => setTimeout(r, 1500));
    const record = await store.create({ id: 'w-2', name: 'web', group: 'script', action: 'CREATE' });
    await moveTo(store, record, 'signalled', {
      failed: true,
      exitCode: 5,
      statusCode: '5',
      signal: { state: 'sent', transport: 'CFN_SIGNAL', attempts: 1 },
    });
    const done = await waiter;
    t.equal(done.code, 1, `the deployment failed: exit 1 (${done.stderr})`);
    t.match(JSON.parse(done.stdout), { version: 1, deployment: { id: 'w-2', state: 'signalled', exitCode: 5 } });
  },
);

t.test(
  'status <id> of a queued cfn-signal: its report, exit 3 while pending, 0 once --wait sees it sent',
  async (t) => {
    const root = t.testdir();
    const loaded = await deployConfig(root);
    const dir = signalQueueDir(loaded.config);
    const entry = await enqueueSignal(
      dir,
      {
        kind: 'cfn',
        url: 'http://127.0.0.1:1/v1/signal/arn?Signature=s3cr3t-sig',
        text: '{"Status":"SUCCESS","UniqueId":"u1"}',
      },
      Date.now(),
    );
    const pending = await run(['status', '--root', root, entry.id]);
    t.equal(pending.code, 3, pending.stderr);
    t.match(pending.stdout, new RegExp(`^cfn-signal signal ${entry.id}\n {2}state: pending`));
    t.notMatch(pending.stdout, 's3cr3t-sig');
    const waiter = run(['status', '--root', root, entry.id, '--wait', '--timeout', '60', '--json']);
    await new Promise((r) => setTimeout(r, 500));
    writeFileSync(
      path.join(dir, `${entry.id}.json`),
      JSON.stringify({
        version: 1,
        id: entry.id,
        kind: 'cfn',
        state: 'sent',
        shownUrl: entry.shownUrl,
        createdAt: entry.createdAt,
        updatedAt: entry.createdAt,
        attempts: 1,
        sentAt: entry.createdAt,
      }),
    );
    const sent = await waiter;
    t.equal(sent.code, 0, sent.stderr);
    t.match(JSON.parse(sent.stdout), { version: 1, signal: { id: entry.id, state: 'sent', attempts: 1 } });
  },
);

t.test(
  'status <id>: the report and its exit code; an unknown id or a bad --timeout: exit 2 with a message',
  async (t) => {
    const root = t.testdir();
    const loaded = await deployConfig(root);
    const store = storeFor(loaded.config, captureLog().log);
    await store.init();
    const r = await store.create({ id: 'f-1', name: 'db', group: 'script', action: 'CREATE' });
    await moveTo(store, r, 'signalled', {
      failed: true,
      exitCode: 4,
      statusCode: '4',
      signal: { state: 'sent', transport: 'CFN_SIGNAL', attempts: 1 },
    });
    const one = await run(['status', '--root', root, 'db']);
    t.equal(one.code, 1, 'the deployment failed');
    t.match(one.stdout, /^deployment f-1 \(db\)$/m);
    const json = await run(['status', '--root', root, 'f-1', '--json']);
    t.match(JSON.parse(json.stdout), { version: 1, deployment: { id: 'f-1', exitCode: 4 } });
    const unknown = await run(['status', '--root', root, 'nope']);
    t.equal(unknown.code, 2);
    t.equal(unknown.stdout, '');
    t.match(unknown.stderr, /^status: no deployment with id or name "nope" is known/);
    const bad = await run(['status', '--root', root, '--wait', '--timeout', 'soon']);
    t.equal(bad.code, 2);
    t.match(bad.stderr, /--timeout wants a number of seconds, not "soon"/);
  },
);
