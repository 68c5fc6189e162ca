import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import type { CollectedPair } from '../../src/collectors/types.js';
import type { PipelineContext } from '../../src/daemon/pipeline.js';
import { deployFromPairs } from '../../src/deploy/deploy-step.js';
import { storeFor } from '../../src/state/store.js';
import { counterLines, deployHarness, deployment, installHooks } from '../helpers/deploy-fixtures.js';
import { startSignalSink } from '../helpers/signal-sink.js';

// The native pipeline's step 55: deployments from the cycle's merged metadata, the heat-config file for upstream
// tools, failures signalled rather than thrown.

function pipelineCtx(h: Awaited<ReturnType<typeof deployHarness>>, pairs: CollectedPair[]): PipelineContext {
  return {
    loaded: h.loaded,
    log: h.captured.log,
    signal: new AbortController().signal,
    configFiles: [],
    pairs,
    changedKeys: pairs.map((p) => p.key),
    force: false,
  };
}

t.test('the deployments of the merged pairs run; the heat-config file is written', async (t) => {
  const root = t.testdir();
  installHooks(root);
  const sink = await startSignalSink();
  t.teardown(() => sink.close());
  const h = await deployHarness(root);
  const counter = path.join(root, 'runs.txt');
  const boot = deployment({ id: 'boot-only', config: { counter } });
  const live = [
    deployment({ id: 'one', config: { counter }, signal: sink.inputs('CFN_SIGNAL', 'one', 'one') }),
    deployment({ id: 'two', config: { counter, exit: 5 }, signal: sink.inputs('CFN_SIGNAL', 'two', 'two') }),
  ];
  const pairs: CollectedPair[] = [
    { key: 'heat_local', value: { deployments: [boot], 'os-collect-config': { collectors: ['cfn'] } } },
    { key: 'cfn', value: { deployments: live } },
    { key: 'settings', value: { app: { port: 80 } } },
    { key: 'odd', value: 'not an object' },
  ];
  await deployFromPairs(h.loaded, h.captured.log, h.http, pipelineCtx(h, pairs));
  t.same(
    counterLines(readFileSync(counter, 'utf8')),
    ['one CREATE', 'two CREATE'],
    'the later source replaces the earlier list',
  );
  t.same(
    sink.received.map((s) => [s.id, s.body.deploy_status_code]),
    [
      ['one', 0],
      ['two', 5],
    ],
    'a failing hook is signalled, not thrown',
  );
  const heatConfig = JSON.parse(readFileSync(path.join(root, 'var/run/heat-config/heat-config'), 'utf8')) as Array<{
    id: string;
  }>;
  t.same(
    heatConfig.map((d) => d.id),
    ['one', 'two'],
  );
  const report = await deployFromPairs(
    h.loaded,
    h.captured.log,
    h.http,
    pipelineCtx(h, [{ key: 'cfn', value: { deployments: live } }]),
  );
  t.same(report.ran, [], 'nothing runs twice');
});

t.test('metadata without deployments: no heat-config file, nothing removed', async (t) => {
  const root = t.testdir();
  installHooks(root);
  const h = await deployHarness(root);
  const step = (ctx: PipelineContext) => deployFromPairs(h.loaded, h.captured.log, h.http, ctx);
  await step(pipelineCtx(h, [{ key: 'cfn', value: { deployments: [deployment({ id: 'keep' })] } }]));
  await step(pipelineCtx(h, [{ key: 'local', value: { something: 'else' } }]));
  const record = await storeFor(h.loaded.config, h.captured.log).read('keep');
  t.equal(record?.state, 'done', 'still known, not removed');
  t.same(
    JSON.parse(readFileSync(path.join(root, 'var/run/heat-config/heat-config'), 'utf8')).length,
    1,
    'the last list stays for upstream tools',
  );
});

t.test('local write failures throw, so the cycle is not committed', async (t) => {
  const root = t.testdir();
  const h = await deployHarness(root);
  mkdirSync(path.join(root, 'var/lib/heat-config'), { recursive: true });
  writeFileSync(path.join(root, 'var/lib/heat-config/deployed'), 'file');
  const step = (ctx: PipelineContext) => deployFromPairs(h.loaded, h.captured.log, h.http, ctx);
  await t.rejects(step(pipelineCtx(h, [{ key: 'cfn', value: { deployments: [deployment({ id: 'x' })] } }])), {
    code: 'ERR_DEPLOYMENT_STATE',
  });
});
