import { chmodSync, mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import type { CollectedPair } from '../../src/collectors/types.js';
import { APPLY_STEP, DEPLOY_STEP, createNativePipeline } from '../../src/daemon/native-pipeline.js';
import type { PipelineContext } from '../../src/daemon/pipeline.js';
import { CommandFailedError } from '../../src/errors.js';
import type { TapTest } from '../helpers/http-test-server.js';
import { storeFor } from '../../src/state/store.js';
import { counterLines, deployHarness, deployment, installHooks } from '../helpers/deploy-fixtures.js';
import { startSignalSink } from '../helpers/signal-sink.js';

// The `run` pipeline: os-refresh-config phases from the image, with apply (20) and deployments (55) done in-process
// at their upstream places among the users' scripts.

const BASE = 'usr/libexec/os-refresh-config';
const TEMPLATES = 'usr/libexec/os-apply-config/templates';

function script(root: string, rel: string, body: string): void {
  const file = path.join(root, BASE, rel);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `#!/bin/bash\nset -eu\n${body}\n`);
  chmodSync(file, 0o755);
}

/** A phase script appending its name (and whether the rendered file and the deployment exist yet) to trace.txt. */
function tracer(root: string, rel: string): void {
  const trace = path.join(root, 'trace.txt');
  const rendered = path.join(root, 'etc/app.conf');
  const counter = path.join(root, 'runs.txt');
  script(
    root,
    rel,
    `r=no; d=no; [ -e ${rendered} ] && r=yes; [ -s ${counter} ] && d=yes\necho "${rel} rendered=$r deployed=$d files=\${OS_CONFIG_FILES:+set}" >> ${trace}`,
  );
}

async function setup(t: TapTest) {
  const root = t.testdir();
  installHooks(root);
  mkdirSync(path.join(root, TEMPLATES, 'etc'), { recursive: true });
  writeFileSync(path.join(root, TEMPLATES, 'etc/app.conf'), 'port = {{app.port}}\n');
  const h = await deployHarness(root);
  const cache = path.join(root, 'var/lib/os-collect-config');
  mkdirSync(cache, { recursive: true });
  const counter = path.join(root, 'runs.txt');
  const value = { app: { port: 8080 }, deployments: [deployment({ id: 'dep-1', config: { counter } })] };
  writeFileSync(path.join(cache, 'local.json'), JSON.stringify(value));
  const pairs: CollectedPair[] = [{ key: 'local', value }];
  const ctx = (): PipelineContext => ({
    loaded: h.loaded,
    log: h.captured.log,
    signal: new AbortController().signal,
    configFiles: [path.join(cache, 'local.json')],
    pairs,
    changedKeys: ['local'],
    force: false,
  });
  return { root, h, ctx, counter, trace: path.join(root, 'trace.txt') };
}

t.test("users' scripts run in sort order around the in-process apply (20) and deployments (55)", async (t) => {
  const { root, h, ctx, counter, trace } = await setup(t);
  tracer(root, 'pre-configure.d/10-pre');
  tracer(root, 'configure.d/10-before-apply');
  tracer(root, 'configure.d/30-between');
  tracer(root, 'configure.d/60-after-deploy');
  tracer(root, 'post-configure.d/10-post');
  await createNativePipeline(h.loaded, h.captured.log, h.http).run(ctx());
  t.same(readFileSync(trace, 'utf8').trim().split('\n'), [
    'pre-configure.d/10-pre rendered=no deployed=no files=set',
    'configure.d/10-before-apply rendered=no deployed=no files=set',
    'configure.d/30-between rendered=yes deployed=no files=set',
    'configure.d/60-after-deploy rendered=yes deployed=yes files=set',
    'post-configure.d/10-post rendered=yes deployed=yes files=set',
  ]);
  t.equal(
    readFileSync(path.join(root, 'etc/app.conf'), 'utf8'),
    'port = 8080\n',
    "template rendered from the cycle's metadata",
  );
  t.same(counterLines(readFileSync(counter, 'utf8')), ['dep-1 CREATE'], 'the deployment ran once');
});

t.test("upstream's own 20-os-apply-config and 55-heat-config files are replaced, not run twice", async (t) => {
  const { root, h, ctx, counter } = await setup(t);
  const marker = path.join(root, 'upstream-ran');
  script(root, `configure.d/${APPLY_STEP}`, `echo apply >> ${marker}`);
  script(root, `configure.d/${DEPLOY_STEP}`, `echo deploy >> ${marker}`);
  await createNativePipeline(h.loaded, h.captured.log, h.http).run(ctx());
  t.notOk(existsSync(marker), 'neither upstream script ran');
  t.ok(existsSync(path.join(root, 'etc/app.conf')), 'the in-process apply ran');
  t.same(counterLines(readFileSync(counter, 'utf8')), ['dep-1 CREATE']);
});

t.test('a failing user script stops the phase before the deployments and fails the cycle', async (t) => {
  const { root, h, ctx, counter } = await setup(t);
  script(root, 'configure.d/30-broken', 'exit 4');
  const err = await createNativePipeline(h.loaded, h.captured.log, h.http)
    .run(ctx())
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  t.ok(err instanceof CommandFailedError, 'a pipeline failure (cache stays uncommitted)');
  t.equal((err as CommandFailedError).exitCode, 1);
  t.match((err as Error).message, /configuration phases failed/);
  t.ok(existsSync(path.join(root, 'etc/app.conf')), 'apply (20) ran before the failing script');
  t.notOk(existsSync(counter), 'deployments (55) did not run after the failure');
});

t.test('a template error fails the cycle and writes nothing', async (t) => {
  const { root, h, ctx, counter } = await setup(t);
  writeFileSync(path.join(root, TEMPLATES, 'etc/bad.conf'), 'value = {{#unclosed}}\n');
  const err = await createNativePipeline(h.loaded, h.captured.log, h.http)
    .run(ctx())
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  t.ok(err instanceof CommandFailedError);
  t.notOk(existsSync(path.join(root, 'etc/app.conf')), 'all or nothing: the good template was not written either');
  t.notOk(existsSync(counter), 'no deployment ran');
});

t.test('no phase directories and no templates: the deployments still run', async (t) => {
  const root = t.testdir();
  installHooks(root);
  const h = await deployHarness(root);
  const counter = path.join(root, 'runs.txt');
  const pairs: CollectedPair[] = [
    { key: 'local', value: { deployments: [deployment({ id: 'solo', config: { counter } })] } },
  ];
  await createNativePipeline(h.loaded, h.captured.log, h.http).run({
    loaded: h.loaded,
    log: h.captured.log,
    signal: new AbortController().signal,
    configFiles: [],
    pairs,
    changedKeys: ['local'],
    force: false,
  });
  t.same(counterLines(readFileSync(counter, 'utf8')), ['solo CREATE']);
});

/** setup() plus an os-apply-config deployment signalled to a real CFN sink, and its record file. */
async function withAppliedDeployment(t: TapTest) {
  const s = await setup(t);
  const sink = await startSignalSink();
  t.teardown(() => sink.close());
  const oac = deployment({
    id: 'oac',
    name: 'oac',
    group: 'os-apply-config',
    config: { app: { port: 9090 } },
    signal: sink.inputs('CFN_SIGNAL', 'oac', 'oac'),
  });
  const value = { app: { port: 8080 }, deployments: [oac] };
  writeFileSync(path.join(s.root, 'var/lib/os-collect-config/local.json'), JSON.stringify(value));
  const pairs: CollectedPair[] = [{ key: 'local', value }];
  const ctx = (signal = new AbortController().signal): PipelineContext => ({ ...s.ctx(), pairs, signal });
  return { ...s, sink, ctx, recordFile: storeFor(s.h.loaded.config, s.h.captured.log).recordPath('oac') };
}

t.test(
  'an os-apply-config deployment is signalled once the whole cycle has succeeded, after the last phase',
  async (t) => {
    const { root, h, ctx, sink, recordFile, trace } = await withAppliedDeployment(t);
    script(
      root,
      'post-configure.d/10-post',
      `if grep -q '"state": *"applied"' ${recordFile}; then echo "post: applied, not yet signalled" >> ${trace}; fi`,
    );
    await createNativePipeline(h.loaded, h.captured.log, h.http).run(ctx());
    t.same(
      readFileSync(trace, 'utf8').trim().split('\n'),
      ['post: applied, not yet signalled'],
      'waiting through the last phase',
    );
    t.same(
      sink.received.map((r) => [r.id, r.body.deploy_status_code]),
      [['oac', 0]],
      'then signalled once, success',
    );
    t.match(readFileSync(recordFile, 'utf8'), /"state": *"signalled"/);
    await createNativePipeline(h.loaded, h.captured.log, h.http).run(ctx());
    t.equal(sink.received.length, 1, 'a later cycle signals nothing again');
  },
);

t.test("a failing cycle signals its os-apply-config deployment as failed, with the apply's error", async (t) => {
  const { root, h, ctx, sink } = await withAppliedDeployment(t);
  writeFileSync(path.join(root, TEMPLATES, 'etc/bad.conf'), 'value = {{#unclosed}}\n');
  const err = await createNativePipeline(h.loaded, h.captured.log, h.http)
    .run(ctx())
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  t.ok(err instanceof CommandFailedError, 'the cycle still fails (uncommitted, retried)');
  t.equal(sink.received.length, 1);
  t.equal(sink.received[0]?.body.deploy_status_code, 1);
  t.match(
    String(sink.received[0]?.body.deploy_stderr),
    /configuration cycle that applies the data of deployment oac failed: .*unclosed/i,
  );
  await createNativePipeline(h.loaded, h.captured.log, h.http)
    .run(ctx())
    .catch(() => undefined);
  t.equal(sink.received.length, 1, 'the retried cycle does not signal it again');
});

t.test('a cycle stopped by shutdown leaves the os-apply-config deployment waiting, unsignalled', async (t) => {
  const { root, h, ctx, sink, recordFile } = await withAppliedDeployment(t);
  const stop = new AbortController();
  // A post-configure script that outlives the shutdown: the refresh is aborted while it runs.
  script(root, 'post-configure.d/10-slow', 'sleep 30');
  const running = createNativePipeline(h.loaded, h.captured.log, h.http)
    .run(ctx(stop.signal))
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  for (let i = 0; i < 200 && !(existsSync(recordFile) && readFileSync(recordFile, 'utf8').includes('applied')); i++)
    await new Promise((r) => setTimeout(r, 50));
  await new Promise((r) => setTimeout(r, 200));
  stop.abort();
  t.ok((await running) instanceof CommandFailedError);
  t.equal(sink.received.length, 0, 'nothing signalled');
  t.match(readFileSync(recordFile, 'utf8'), /"state": *"applied"/, 'still waiting for a cycle to end');
});
