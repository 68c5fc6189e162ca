import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { runDeployments } from '../../src/deploy/dispatch.js';
import { storeFor } from '../../src/state/store.js';
import type { TapTest } from '../helpers/http-test-server.js';
import { counterLines, deployHarness, deployment, installHooks } from '../helpers/deploy-fixtures.js';

// A deployment whose effects went when it left the metadata for a while (docker-cmd's containers removed by the
// built-in hook's removal) is applied again when it is listed again: its record never says done while its containers
// are gone. The docker-cmd hook file is the fake hook of test/fixtures/hooks (it counts its runs) and docker is the
// recording fake of test/fixtures/fake-tools: the pass's rule is under test; docker-cmd's own test drives a dockerd.

const FAKE_DOCKER = path.resolve('test/fixtures/fake-tools/docker');

async function setup(t: TapTest, hook: string) {
  const root = t.testdir();
  installHooks(root, { [hook]: { from: 'fake' } });
  const h = await deployHarness(root);
  const env = { ...process.env, HEAT_DOCKER_CMD: FAKE_DOCKER, FAKE_TOOL_RECORD: path.join(root, 'docker.jsonl') };
  const counter = path.join(root, 'runs.txt');
  const store = storeFor(h.loaded.config, h.captured.log);
  const pass = (deps: Record<string, unknown>[]) => runDeployments(h.ctx(deps, { env }));
  const runs = () => counterLines(existsSync(counter) ? readFileSync(counter, 'utf8') : '');
  const dockerCalls = () => readFileSync(env.FAKE_TOOL_RECORD, 'utf8');
  return { counter, store, pass, runs, dockerCalls };
}

t.test('docker-cmd containers removed by a metadata blip are run again when listed again', async (t) => {
  const { counter, store, pass, runs, dockerCalls } = await setup(t, 'docker-cmd');
  const d = deployment({ id: 'web', group: 'docker-cmd', config: { counter } });
  await pass([d]);
  t.same(runs(), ['web CREATE']);

  await pass([]);
  const removed = await store.read('web');
  t.equal(removed?.state, 'removed');
  t.match(dockerCalls(), /"ps"/, "docker-cmd's removal asked docker for the containers");
  t.equal(removed?.stateBeforeRemoval, 'pending', 'its effects were undone: it goes back to pending');

  await pass([d]);
  t.same(runs(), ['web CREATE', 'web CREATE'], 'applied again');
  const back = await store.read('web');
  t.equal(back?.state, 'done');
  t.equal(back?.hookStarts, 1, 'a new run, counted from its first start');
});

t.test('a deployment whose hook keeps nothing resumes where it was (not run again)', async (t) => {
  const { counter, store, pass, runs } = await setup(t, 'fake');
  const d = deployment({ id: 'cfg', config: { counter } });
  await pass([d]);
  const first = await store.read('cfg');
  await pass([]);
  t.equal((await store.read('cfg'))?.stateBeforeRemoval, first?.state);
  await pass([d]);
  t.equal((await store.read('cfg'))?.state, first?.state);
  t.same(runs(), ['cfg CREATE'], 'not run again');
});
