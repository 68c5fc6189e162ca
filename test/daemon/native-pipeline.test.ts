import { chmodSync, mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import type { CollectedPair } from '../../src/collectors/types.js';
import { APPLY_STEP, DEPLOY_STEP, createNativePipeline } from '../../src/daemon/native-pipeline.js';
import type { PipelineContext } from '../../src/daemon/pipeline.js';
import { CommandFailedError } from '../../src/errors.js';
import type { TapTest } from '../helpers/http-test-server.js';
import { counterLines, deployHarness, deployment, installHooks } from '../helpers/deploy-fixtures.js';

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
  script(root, rel, `r=no; d=no; [ -e ${rendered} ] && r=yes; [ -s ${counter} ] && d=yes\necho "${rel} rendered=$r deployed=$d files=\${OS_CONFIG_FILES:+set}" >> ${trace}`);
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

t.test('users\' scripts run in sort order around the in-process apply (20) and deployments (55)', async (t) => {
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
  t.equal(readFileSync(path.join(root, 'etc/app.conf'), 'utf8'), 'port = 8080\n', 'template rendered from the cycle\'s metadata');
  t.same(counterLines(readFileSync(counter, 'utf8')), ['dep-1 CREATE'], 'the deployment ran once');
});

t.test('upstream\'s own 20-os-apply-config and 55-heat-config files are replaced, not run twice', async (t) => {
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
  const err = await createNativePipeline(h.loaded, h.captured.log, h.http).run(ctx()).then(() => undefined, (e: unknown) => e);
  t.ok(err instanceof CommandFailedError, 'a pipeline failure (cache stays uncommitted)');
  t.equal((err as CommandFailedError).exitCode, 1);
  t.match((err as Error).message, /configuration phases failed/);
  t.ok(existsSync(path.join(root, 'etc/app.conf')), 'apply (20) ran before the failing script');
  t.notOk(existsSync(counter), 'deployments (55) did not run after the failure');
});

t.test('a template error fails the cycle and writes nothing', async (t) => {
  const { root, h, ctx, counter } = await setup(t);
  writeFileSync(path.join(root, TEMPLATES, 'etc/bad.conf'), 'value = {{#unclosed}}\n');
  const err = await createNativePipeline(h.loaded, h.captured.log, h.http).run(ctx()).then(() => undefined, (e: unknown) => e);
  t.ok(err instanceof CommandFailedError);
  t.notOk(existsSync(path.join(root, 'etc/app.conf')), 'all or nothing: the good template was not written either');
  t.notOk(existsSync(counter), 'no deployment ran');
});

t.test('no phase directories and no templates: the deployments still run', async (t) => {
  const root = t.testdir();
  installHooks(root);
  const h = await deployHarness(root);
  const counter = path.join(root, 'runs.txt');
  const pairs: CollectedPair[] = [{ key: 'local', value: { deployments: [deployment({ id: 'solo', config: { counter } })] } }];
  await createNativePipeline(h.loaded, h.captured.log, h.http).run({
    loaded: h.loaded, log: h.captured.log, signal: new AbortController().signal, configFiles: [], pairs, changedKeys: ['local'], force: false,
  });
  t.same(counterLines(readFileSync(counter, 'utf8')), ['solo CREATE']);
});
