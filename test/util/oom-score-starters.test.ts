import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import * as oomScore from '../../src/util/oom-score.js';
import * as processGroup from '../../src/util/process-group.js';
import type { PipelineContext } from '../../src/daemon/pipeline.js';

// The agent runs at oom_score_adj -500 (its unit); what it starts must be born at the kernel's neutral 0
// (docs/systemd.md). process-group.ts's runProcess, the one place that starts processes (lint refuses child_process
// elsewhere), has its own test (process-group-oom-scope.test.ts); these are the modules that start processes through
// it with options of their own: a phase script, environment.d's bash, an executable template, the `command` pipeline.
// Lowering this process's own value needs CAP_SYS_RESOURCE, which the test machine does not give root, so each module
// is loaded with runProcess aimed at a value above this process's own (raising needs no privilege): the processes
// they start, real ones, must report that value.

const OWN_FILE = '/proc/self/oom_score_adj';
const own = Number.parseInt(readFileSync(OWN_FILE, 'utf8'), 10);
const target = Math.min(1000, own + 300);
const aimed = {
  ...processGroup,
  runProcess: (options: processGroup.ProcessOptions) => processGroup.runProcess({ ...options, oomScoreAdj: target }),
};
const MOCKS = { '../../src/util/process-group.js': aimed };

t.test('startBornNeutral: the process is born with the target value, the agent keeps its own', async (t) => {
  const { spawnSync } = await import('node:child_process');
  // spawnSync returns no pid field until it ran; the value is read by the child itself.
  const res = oomScore.startBornNeutral(() => spawnSync('cat', [OWN_FILE], { encoding: 'utf8' }), target);
  t.equal(Number(res.stdout.trim()), target);
  t.equal(Number.parseInt(readFileSync(OWN_FILE, 'utf8'), 10), own);
});

t.test('the modules that start processes start them through runProcess (aimed higher here)', async (t) => {
  const dir = t.testdir({});
  const seenBy = (name: string) => path.join(dir, `${name}.seen`);
  const script = (name: string, body: string) => {
    const file = path.join(dir, name);
    writeFileSync(file, `#!/bin/sh\n${body}\n`);
    chmodSync(file, 0o755);
    return file;
  };
  const env = { PATH: '/usr/bin:/bin' };

  const { runScript } = await t.mockImport<typeof import('../../src/refresh/run-script.js')>(
    '../../src/refresh/run-script.js',
    MOCKS,
  );
  const phase = await runScript({
    file: script('phase', `cat ${OWN_FILE} > ${seenBy('phase')}`),
    env,
    output: 'ignore',
  });
  t.equal(phase.exitCode, 0);
  t.equal(Number(readFileSync(seenBy('phase'), 'utf8')), target, 'a phase script');

  const { sourceEnvironment } = await t.mockImport<typeof import('../../src/refresh/environment-d.js')>(
    '../../src/refresh/environment-d.js',
    MOCKS,
  );
  const envFile = path.join(dir, 'env');
  writeFileSync(envFile, `export SEEN=$(cat ${OWN_FILE})\n`);
  const sourced = await sourceEnvironment([envFile], env, { stderr: 'ignore' });
  t.equal(Number(sourced.SEEN), target, "environment.d's bash");

  const { runExecutableTemplate } = await t.mockImport<typeof import('../../src/apply/executable-template.js')>(
    '../../src/apply/executable-template.js',
    MOCKS,
  );
  t.equal(Number(await runExecutableTemplate(script('template', `cat ${OWN_FILE}`), {})), target, 'a template');

  const { createCommandPipeline } = await t.mockImport<typeof import('../../src/daemon/command-pipeline.js')>(
    '../../src/daemon/command-pipeline.js',
    MOCKS,
  );
  const log = { info: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined };
  const ctx = { log, signal: new AbortController().signal, configFiles: [] } as unknown as PipelineContext;
  await createCommandPipeline(`cat ${OWN_FILE} > ${seenBy('command')}`, { stdio: 'ignore' }).run(ctx);
  t.equal(Number(readFileSync(seenBy('command'), 'utf8')), target, 'the command pipeline, and all it starts');

  t.equal(Number.parseInt(readFileSync(OWN_FILE, 'utf8'), 10), own, 'this process is back at its own value');
});
