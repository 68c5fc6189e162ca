import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { runDeployments } from '../../src/deploy/dispatch.js';
import { queuedSignal } from '../../src/signals/outbox.js';
import { signalTargetFor } from '../../src/heat/signal-target.js';
import { parseDeployment } from '../../src/heat/deployment.js';
import { storeFor, type DeploymentRecord, type StateStore } from '../../src/state/store.js';
import { counterLines, deployHarness, deployment, installHooks } from '../helpers/deploy-fixtures.js';
import { startSignalSink } from '../helpers/signal-sink.js';
import { moveTo } from '../helpers/state-path.js';

// The dispatcher carrying out each crash window's decision in-process (the decisions themselves:
// dispatch-decision.test.ts; with SIGKILL: crash-resume.test.ts): the state a crash after each write leaves is built
// on disk, then one pass runs. Whatever the window, the hook runs at most once more and Heat gets one signal.

type Window = {
  name: string;
  build: (store: StateStore, fresh: () => Promise<DeploymentRecord>, dep: Record<string, unknown>) => Promise<unknown>;
  hookRuns: number;
  signals: number;
};

const windows: Window[] = [
  { name: 'record pending', build: async (_s, fresh) => fresh(), hookRuns: 1, signals: 1 },
  {
    name: 'deployed file',
    build: async (s, fresh, dep) => Promise.all([fresh(), s.writeDeployed(String(dep.id), dep as never)]),
    hookRuns: 1,
    signals: 1,
  },
  {
    name: 'running',
    build: async (s, fresh, dep) => {
      await s.writeDeployed(String(dep.id), dep as never);
      return moveTo(s, await fresh(), 'running', { hookStarts: 1 });
    },
    hookRuns: 1,
    signals: 1,
  },
  {
    name: 'done (result and queued signal)',
    build: async (s, fresh, dep) => {
      const parsed = parseDeployment(dep);
      const choice = parsed.ok ? signalTargetFor(parsed.deployment) : undefined;
      if (!choice?.ok) throw new Error('fixture: no signal target');
      return moveTo(s, await moveTo(s, await fresh(), 'running', { hookStarts: 1 }), 'done', {
        exitCode: 0,
        failed: false,
        signal: queuedSignal(choice.target, '{"deploy_status_code": 0}'),
      });
    },
    hookRuns: 0,
    signals: 1,
  },
  {
    name: 'signalled',
    build: async (s, fresh) =>
      moveTo(s, await fresh(), 'signalled', { signal: { state: 'sent', transport: 'CFN_SIGNAL', attempts: 1 } }),
    hookRuns: 0,
    signals: 0,
  },
];

t.test('a pass after a crash at each write: the hook runs at most once more, one signal', async (t) => {
  const sink = await startSignalSink();
  t.teardown(() => sink.close());
  for (const w of windows) {
    const root = t.testdir();
    installHooks(root, { fake: {} });
    const h = await deployHarness(root);
    const store = storeFor(h.loaded.config, h.captured.log);
    await store.init();
    const counter = path.join(root, 'runs.txt');
    const id = `w-${windows.indexOf(w)}`;
    const dep = deployment({
      id,
      name: `res-${id}`,
      config: { counter },
      signal: sink.inputs('CFN_SIGNAL', id, `res-${id}`),
    });
    await w.build(store, () => store.create({ id, name: `res-${id}`, group: 'fake', action: 'CREATE' }), dep);
    const report = await runDeployments(h.ctx([dep]));
    const runs = counterLines(existsSync(counter) ? readFileSync(counter, 'utf8') : '');
    t.equal(runs.length, w.hookRuns, `after "${w.name}": hook runs`);
    t.equal(sink.countFor(id), w.signals, `after "${w.name}": signals`);
    t.equal((await store.read(id))?.state, 'signalled', `after "${w.name}": settled`);
    t.same(report.held, []);
  }
});
