import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { bundleChild, runChild, type ChildResult } from '../helpers/crash-child.js';
import { storeFor } from '../../src/state/store.js';
import { counterLines, deployConfig, deployment, installHooks } from '../helpers/deploy-fixtures.js';
import { captureLog } from '../helpers/log-capture.js';
import { startSignalSink, type SignalSink } from '../helpers/signal-sink.js';

// Crash safety of the deployment state machine: the dispatcher runs in a child process that is SIGKILLed right
// after each state change in turn (pending, running, done, signalled, for every deployment), then restarted. Whatever
// the moment, every deployment ends signalled exactly once and no completed hook runs again.

function runTrialChild(bundle: string, root: string, metadata: string, killAt?: number): Promise<ChildResult> {
  return runChild(bundle, [root, metadata, ...(killAt ? [String(killAt)] : [])], {
    COUNTER_FILE: path.join(root, 'runs.txt'),
  });
}

function round(
  sink: SignalSink,
  base: string,
  tag: string,
): { root: string; metadata: string; counter: string; ids: { signalled: string[]; all: string[]; hooks: string[] } } {
  const root = path.join(base, tag);
  mkdirSync(root, { recursive: true });
  // A shell hook (fast) that appends "<id> <action>" to $COUNTER_FILE: <root>/runs.txt.
  installHooks(root, { count: {} });
  const counter = path.join(root, 'runs.txt');
  const id = (n: string) => `${tag}-${n}`;
  const list = [
    deployment({
      id: id('cfn'),
      name: id('cfn'),
      group: 'count',
      signal: sink.inputs('CFN_SIGNAL', id('cfn'), id('cfn')),
    }),
    deployment({
      id: id('heat'),
      name: id('heat'),
      group: 'count',
      signal: sink.inputs('HEAT_SIGNAL', id('heat'), id('heat')),
    }),
    deployment({
      id: id('nohook'),
      name: id('nohook'),
      group: 'missing-tool',
      signal: sink.inputs('TEMP_URL_SIGNAL', id('nohook'), id('nohook')),
    }),
    deployment({ id: id('quiet'), name: id('quiet'), group: 'count' }),
  ];
  const metadata = path.join(root, 'deployments.json');
  writeFileSync(metadata, JSON.stringify(list));
  return {
    root,
    metadata,
    counter,
    ids: {
      signalled: [id('cfn'), id('heat'), id('nohook')],
      all: list.map((d) => d.id),
      hooks: [id('cfn'), id('heat'), id('quiet')],
    },
  };
}

t.test(
  'SIGKILL at every state transition, then restart: one signal per deployment, no completed hook re-run',
  async (t) => {
    const base = t.testdir();
    const bundle = await bundleChild('test/deploy/crash-child.ts', base);
    const sink = await startSignalSink();
    t.teardown(() => sink.close());

    const clean = round(sink, base, 'clean');
    const first = await runTrialChild(bundle, clean.root, clean.metadata);
    t.equal(first.code, 0, 'a clean run completes');
    const { transitions } = JSON.parse(first.out) as { transitions: number };
    t.equal(transitions, 14, 'pending/running/done/signalled x2, pending/done/signalled, pending/running/done');
    for (const id of clean.ids.signalled) t.equal(sink.countFor(id), 1);

    const rounds = Array.from({ length: transitions }, (_, i) => i + 1);
    const results: Array<{ k: number; killed: ChildResult; resumed: ChildResult; r: ReturnType<typeof round> }> = [];
    // A few rounds at a time: each is an independent instance root.
    for (let i = 0; i < rounds.length; i += 4) {
      results.push(
        ...(await Promise.all(
          rounds.slice(i, i + 4).map(async (k) => {
            const r = round(sink, base, `k${k}`);
            const killed = await runTrialChild(bundle, r.root, r.metadata, k);
            const resumed = await runTrialChild(bundle, r.root, r.metadata);
            return { k, killed, resumed, r };
          }),
        )),
      );
    }
    for (const { k, killed, resumed, r } of results) {
      t.equal(killed.signal, 'SIGKILL', `round ${k}: killed at transition ${k}`);
      if (resumed.code !== 0) t.comment(resumed.err);
      t.equal(resumed.code, 0, `round ${k}: the restart completes`);
      for (const id of r.ids.signalled) t.equal(sink.countFor(id), 1, `round ${k}: ${id} signalled exactly once`);
      const runs = counterLines(existsSync(r.counter) ? readFileSync(r.counter, 'utf8') : '');
      t.same(runs.sort(), r.ids.hooks.map((id) => `${id} CREATE`).sort(), `round ${k}: every hook ran exactly once`);
      const records = await storeFor((await deployConfig(r.root)).config, captureLog().log).list(true);
      t.same(
        records.map((x) => [x.id, x.state, x.signal.state]).sort(),
        r.ids.all
          .map((id) => [id, id.endsWith('-quiet') ? 'done' : 'signalled', id.endsWith('-quiet') ? 'none' : 'sent'])
          .sort(),
        `round ${k}: every record settled`,
      );
    }
    const failures = sink.received.filter((s) => s.id.endsWith('-nohook'));
    t.ok(
      failures.every((s) => s.body.deploy_status_code === 127),
      'the missing hook is signalled as a failure every time',
    );
  },
);
