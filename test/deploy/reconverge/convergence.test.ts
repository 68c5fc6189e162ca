import { chmodSync, copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { depsFor } from '../../../src/deploy/context.js';
import { runDeployments } from '../../../src/deploy/dispatch.js';
import { reconvergePass } from '../../../src/deploy/reconverge/pass.js';
import { formatDetail, readDetail } from '../../../src/status/detail.js';
import { formatReport } from '../../../src/status/format.js';
import { readReport } from '../../../src/status/report.js';
import { EXIT, verdictOf } from '../../../src/status/verdict.js';
import { storeFor, type DeploymentRecord } from '../../../src/state/store.js';
import { deployHarness, deployment, HOOKS_DIR as ROOT_HOOKS_DIR } from '../../helpers/deploy-fixtures.js';
import type { TapTest } from '../../helpers/http-test-server.js';
import { startSignalSink } from '../../helpers/signal-sink.js';
import { HOOKS_DIR, SYSTEM_PATH } from '../../hooks/hook-process.js';

// Convergence end to end with the built hooks (dist/hooks, `npm run build` first): the real Debian puppet
// (`puppet apply --detailed-exitcodes`) and a real bash script. The deployment is run and signalled once to a real
// loopback signal server; then the test drifts the machine between re-runs, and each re-run repairs it and records
// changed, converged or failed, which `status` reports. The server counts every request: none after the first.
// The clock is the test's own, moved past the 1 s interval, so no test waits for an interval to pass.

/** Real puppet, kept out of the system's own directories (a wrapper adding its directory settings after `apply`). */
function realPuppet(dir: string): string {
  const state = path.join(dir, 'puppet-state');
  const wrapper = path.join(dir, 'puppet');
  const flags = ['confdir', 'vardir', 'logdir', 'rundir', 'codedir', 'publicdir']
    .map((d) => `--${d} ${state}/${d}`)
    .join(' ');
  writeFileSync(wrapper, `#!/bin/sh\nshift\nexec /usr/bin/puppet apply ${flags} "$@"\n`);
  chmodSync(wrapper, 0o755);
  return wrapper;
}

interface Case {
  readonly group: 'script' | 'puppet';
  /** The config that keeps `target` holding "desired", failing while `broken` exists. */
  config(target: string, broken: string): string;
  env(dir: string): Record<string, string>;
}

const CASES: Case[] = [
  {
    group: 'script',
    config: (target, broken) =>
      [
        '#!/bin/bash',
        `[ -e ${broken} ] && { echo "cannot converge: ${broken} is in the way" >&2; exit 3; }`,
        `if [ "$(cat ${target} 2>/dev/null)" = desired ]; then echo false > "$heat_outputs_path.deploy_changed"`,
        `else printf desired > ${target}; echo true > "$heat_outputs_path.deploy_changed"; fi`,
      ].join('\n'),
    env: () => ({}),
  },
  {
    group: 'puppet',
    config: (target, broken) =>
      [
        `exec { 'check': command => '/bin/false', onlyif => '/usr/bin/test -e ${broken}' }`,
        `file { '${target}': content => 'desired' }`,
      ].join('\n'),
    env: (dir) => ({ HEAT_PUPPET_CMD: realPuppet(dir) }),
  },
];

async function setup(t: TapTest, c: Case) {
  const dir = t.testdir();
  const root = path.join(dir, 'root');
  mkdirSync(path.join(root, ROOT_HOOKS_DIR), { recursive: true });
  copyFileSync(path.join(HOOKS_DIR, c.group), path.join(root, ROOT_HOOKS_DIR, c.group));
  chmodSync(path.join(root, ROOT_HOOKS_DIR, c.group), 0o755);
  const sink = await startSignalSink();
  t.teardown(() => sink.close());
  const h = await deployHarness(root);
  let clock = Date.now();
  const target = path.join(dir, 'managed.txt');
  const broken = path.join(dir, 'broken');
  const id = `${c.group}-converge-0001`;
  const dep = deployment({
    id,
    name: `${c.group}_converge`,
    group: c.group,
    config: c.config(target, broken),
    options: { reconverge_interval: 60 },
    signal: sink.inputs('CFN_SIGNAL', id, `${c.group}_converge`),
  });
  const ctx = h.ctx([dep], { env: { PATH: SYSTEM_PATH, HOME: dir, ...c.env(dir) }, now: () => clock });
  const store = storeFor(h.loaded.config, h.captured.log);
  return {
    h,
    sink,
    id,
    target,
    broken,
    ctx,
    first: () => runDeployments(ctx),
    /** Moves the clock past the interval and runs one pass of re-runs. */
    rerun: async () => {
      clock += 61_000;
      return reconvergePass(depsFor(ctx), new AbortController().signal);
    },
    record: async () => (await store.read(id)) as DeploymentRecord,
    status: async () => {
      const report = await readReport(h.loaded, h.captured.log);
      return { text: formatReport(report, verdictOf(report)), exit: verdictOf(report).exitCode, report };
    },
  };
}

for (const c of CASES)
  t.test(`${c.group}: drift repaired and reported, a failing re-run in status, one signal in all`, async (t) => {
    const s = await setup(t, c);
    const first = await s.first();
    t.same(first.ran, [s.id], 'the first run');
    t.equal(readFileSync(s.target, 'utf8'), 'desired');
    t.equal(s.sink.attempts.length, 1, 'the first run is signalled');
    t.equal((await s.record()).state, 'signalled');
    t.equal((await s.status()).exit, EXIT.done);

    const calm = await s.rerun();
    t.equal(calm.ran, 1);
    t.match((await s.record()).reconverge, { runs: 1, last: { outcome: 'converged' } }, 'nothing had drifted');
    t.equal((await s.status()).exit, EXIT.done, 'converged: status is good');

    writeFileSync(s.target, 'drifted by hand');
    await s.rerun();
    t.equal(readFileSync(s.target, 'utf8'), 'desired', 'the drift was repaired');
    t.match((await s.record()).reconverge, { runs: 2, last: { outcome: 'changed', exitCode: 0 } });
    const drifted = await s.status();
    t.equal(drifted.exit, EXIT.drifted, 'a re-run that changed something: status says drift');
    t.match(drifted.text, /RE-RUNS\n.*\n.*changed/);
    t.match(drifted.text, /had drifted/);

    writeFileSync(s.broken, '');
    await s.rerun();
    const failed = await s.record();
    t.equal(failed.reconverge?.last?.outcome, 'failed');
    t.equal(failed.state, 'signalled', 'a failed re-run leaves the deployment where it was');
    const bad = await s.status();
    t.equal(bad.exit, EXIT.deploymentFailed, 'a failed re-run fails status');
    t.match(bad.text, /RESULT: a deployment failed/);
    t.match(bad.report.deployments[0]?.reconverge, {
      runs: 3,
      last: { outcome: 'failed', reason: /deploy_status_code/ },
    });
    const detail = await readDetail(s.h.loaded.config, s.h.captured.log, s.id);
    t.equal(detail.ok, true);
    if (detail.ok) {
      const text = formatDetail(detail.detail);
      t.match(text, /re-runs: 3 \(every 60 s, next /);
      t.match(text, /last re-run: .*: failed/);
    }
    const line = s.h.captured.lines.filter((l) => l.msg === 'deployment re-run');
    t.same(
      line.map((l) => l.outcome),
      ['converged', 'changed', 'failed'],
      'one log line per re-run',
    );

    rmSync(s.broken);
    await s.rerun();
    t.equal(readFileSync(s.target, 'utf8'), 'desired');
    t.equal((await s.record()).reconverge?.last?.outcome, 'converged');
    t.equal((await s.status()).exit, EXIT.done, 'the next good run clears the verdict');

    t.equal(s.sink.attempts.length, 1, 'no signal request after the first');
  });
