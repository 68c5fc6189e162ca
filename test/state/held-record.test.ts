import { existsSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import {
  forgetDeployment,
  rerunDeployment,
  runDeployments,
  settleAppliedDeployments,
} from '../../src/deploy/dispatch.js';
import { storeFor } from '../../src/state/store.js';
import { readReport } from '../../src/status/report.js';
import { EXIT, verdictOf } from '../../src/status/verdict.js';
import { counterLines, deployHarness, deployment, installHooks } from '../helpers/deploy-fixtures.js';
import { startSignalSink } from '../helpers/signal-sink.js';

// A record that cannot be used (damaged, or written by another release) holds its deployment: not run, not
// signalled, not removed, not pruned, never overwritten, while the others go on; `status` reports it (exit 2),
// `deploy --rerun` refuses it and `deploy --forget` clears it. Real hooks, a real signal server, real state on disk.

const LATER_RELEASE = JSON.stringify({ version: 2, id: 'held', name: 'res-held', state: 'finished' });

t.test(
  'a held deployment: the rest of the pass goes on, the file is kept, status says so, --forget clears it',
  async (t) => {
    const root = t.testdir();
    const sink = await startSignalSink();
    t.teardown(() => sink.close());
    installHooks(root, { fake: {} });
    const h = await deployHarness(root, { deploy: { prune_after: 1 } });
    const store = storeFor(h.loaded.config, h.captured.log);
    await store.init();
    const counter = path.join(root, 'runs.txt');
    const runs = () => counterLines(existsSync(counter) ? readFileSync(counter, 'utf8') : '');
    const dep = (id: string, group = 'fake') =>
      deployment({
        id,
        name: `res-${id}`,
        group,
        config: { counter },
        signal: sink.inputs('CFN_SIGNAL', id, `res-${id}`),
      });
    const list = [dep('held'), dep('fine'), dep('applied-held', 'os-apply-config')];

    writeFileSync(store.recordPath('held'), LATER_RELEASE);
    writeFileSync(store.recordPath('applied-held'), '{"version": 1, "id": "applied-held", "state": "applied"');
    // A record gone from the metadata, damaged, with an old deployed file: neither removed nor pruned.
    writeFileSync(store.recordPath('gone'), '{}');
    writeFileSync(store.deployedPath('gone'), '{}');
    utimesSync(store.deployedPath('gone'), new Date('2020-01-01T00:00:00Z'), new Date('2020-01-01T00:00:00Z'));

    const report = await runDeployments(h.ctx(list));
    t.same(report.ran, ['fine'], 'the usable deployment runs');
    t.same(
      report.held.map((x) => x.id),
      ['held', 'applied-held'],
    );
    t.match(report.held[0]?.reason, /it has version 2, and this agent reads version 1 .*deploy --forget held/);
    t.same(runs(), ['fine CREATE'], 'the held hook did not run');
    t.same(
      sink.received.map((s) => s.id),
      ['fine'],
      'nothing sent for the held ones',
    );
    t.same(report.removed, [], 'a damaged record not in the metadata is not marked removed');
    t.same(report.pruned, [], 'nor are its files pruned, however old');
    t.ok(existsSync(store.deployedPath('gone')));
    const errors = h.captured.lines.filter((l) => l.msg === 'deployment record cannot be used; deployment held');
    t.same(errors.map((l) => l.deploymentId).sort(), ['applied-held', 'gone', 'held'], 'one error line each');
    t.ok(errors.every((l) => l.code === 'ERR_DEPLOYMENT_RECORD' && typeof l.problem === 'string'));

    // The end of a failed cycle would signal (and create records for) os-apply-config deployments: not a held one.
    const settled = await settleAppliedDeployments(h.ctx(list), { ok: false, reason: 'phase failed' });
    t.same(settled.signalled, []);
    t.equal(readFileSync(store.recordPath('held'), 'utf8'), LATER_RELEASE, 'never overwritten');
    t.match(
      readFileSync(store.recordPath('applied-held'), 'utf8'),
      /^\{"version": 1, "id": "applied-held", "state": "applied"$/,
    );

    const status = await readReport(h.loaded, h.captured.log);
    t.same(
      status.unusableRecords?.map((u) => u.id),
      ['applied-held', 'gone', 'held'],
    );
    const verdict = verdictOf(status);
    t.equal(verdict.exitCode, EXIT.agentOrSignalError);
    t.match(
      verdict.reasons.join('\n'),
      /deployment held is held: its record .*held\.json cannot be used \(it has version 2/,
    );

    await t.rejects(rerunDeployment(h.ctx(list), 'held', 0), {
      code: 'ERR_DEPLOYMENT_RECORD',
      message: /deploy --forget held/,
    });
    t.equal(
      await forgetDeployment(h.ctx(list), 'held', 0),
      undefined,
      'forgotten; there was no usable record to return',
    );
    t.notOk(existsSync(store.recordPath('held')));
    const after = await runDeployments(h.ctx(list));
    t.same(after.ran, ['held'], 'the next pass runs it as new');
    t.same(
      after.held.map((x) => x.id),
      ['applied-held'],
    );
    t.equal((await store.read('held'))?.state, 'signalled');
  },
);

t.test('--forget of an id whose only trace is a damaged record', async (t) => {
  const root = t.testdir();
  const h = await deployHarness(root);
  const store = storeFor(h.loaded.config, h.captured.log);
  await store.init();
  writeFileSync(store.recordPath('only'), 'not json');
  await forgetDeployment(h.ctx(undefined), 'only', 0);
  t.notOk(existsSync(store.recordPath('only')));
  t.ok(
    h.captured.lines.some(
      (l) => l.msg === 'deployment record cannot be used; forgetting it' && l.code === 'ERR_DEPLOYMENT_RECORD',
    ),
  );
});
