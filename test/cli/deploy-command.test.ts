import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { runBundle as run } from '../helpers/bundle.js';
import { counterLines, deployment, installHooks } from '../helpers/deploy-fixtures.js';
import { startSignalSink } from '../helpers/signal-sink.js';

// `os-config-agent deploy` as an operator runs it: the real bundle, under --root.

const logLines = (text: string) =>
  text
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);

t.test('--heat-config FILE: runs the hooks, signals, exits 0; a failed deployment makes it exit 1', async (t) => {
  const root = t.testdir();
  installHooks(root);
  const sink = await startSignalSink();
  t.teardown(() => sink.close());
  const counter = path.join(root, 'runs.txt');
  const file = path.join(root, 'etc/heat-config.json');
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(
    file,
    JSON.stringify([deployment({ id: 'c1', config: { counter }, signal: sink.inputs('CFN_SIGNAL', 'c1', 'c1') })]),
  );
  const ok = await run(['deploy', '--root', root, '--heat-config', '/etc/heat-config.json']);
  t.equal(ok.code, 0, 'exit 0');
  t.equal(ok.stdout, '', 'logs go to stderr');
  t.same(counterLines(readFileSync(counter, 'utf8')), ['c1 CREATE']);
  t.equal(sink.countFor('c1'), 1);
  const lines = logLines(ok.stderr);
  t.ok(lines.some((l) => l.msg === 'deployment state changed' && l.deploymentId === 'c1' && l.to === 'signalled'));
  t.notMatch(ok.stderr, /Signature=[A-Za-z0-9%+/]{8}/, 'no signature in the logs');

  writeFileSync(
    file,
    JSON.stringify([
      deployment({ id: 'c1', config: { counter } }),
      deployment({ id: 'c2', config: { counter, exit: 2 }, signal: sink.inputs('CFN_SIGNAL', 'c2', 'c2') }),
    ]),
  );
  const failed = await run(['deploy', '--root', root, '--heat-config', '/etc/heat-config.json']);
  t.equal(failed.code, 1, 'a failed deployment');
  t.same(counterLines(readFileSync(counter, 'utf8')), ['c1 CREATE', 'c2 CREATE'], 'c1 not run again');
  t.equal(sink.countFor('c2'), 1);
});

t.test(
  'an os-apply-config deployment is signalled at the end of the pass (deploy follows the apply, as 55-heat-config)',
  async (t) => {
    const root = t.testdir();
    installHooks(root);
    const sink = await startSignalSink();
    t.teardown(() => sink.close());
    const file = path.join(root, 'etc/heat-config.json');
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(
      file,
      JSON.stringify([
        deployment({
          id: 'oac',
          name: 'oac',
          group: 'os-apply-config',
          config: { a: 1 },
          signal: sink.inputs('CFN_SIGNAL', 'oac', 'oac'),
        }),
      ]),
    );
    const res = await run(['deploy', '--root', root, '--heat-config', '/etc/heat-config.json']);
    t.equal(res.code, 0, 'exit 0');
    t.equal(sink.countFor('oac'), 1, 'signalled once');
    t.equal(sink.received[0]?.body.deploy_status_code, 0);
    t.equal((await run(['deploy', '--root', root, '--heat-config', '/etc/heat-config.json'])).code, 0);
    t.equal(sink.countFor('oac'), 1, 'not again');
    t.equal(
      (await run(['deploy', '--root', root, '--heat-config', '/etc/heat-config.json', '--rerun', 'oac'])).code,
      0,
    );
    t.equal(sink.countFor('oac'), 2, '--rerun signals it again, at the end of the command');
  },
);

t.test('from the cache: os_config_files.json merged; the heat-config file written', async (t) => {
  const root = t.testdir();
  installHooks(root);
  const counter = path.join(root, 'runs.txt');
  const cache = path.join(root, 'var/lib/os-collect-config');
  mkdirSync(cache, { recursive: true });
  writeFileSync(
    path.join(cache, 'heat_local.json'),
    JSON.stringify({ deployments: [deployment({ id: 'old', config: { counter } })] }),
  );
  writeFileSync(
    path.join(cache, 'cfn.json'),
    JSON.stringify({ deployments: [deployment({ id: 'new', config: { counter } })] }),
  );
  writeFileSync(
    path.join(cache, 'os_config_files.json'),
    JSON.stringify(['/var/lib/os-collect-config/heat_local.json', '/var/lib/os-collect-config/cfn.json']),
  );
  const res = await run(['deploy', '--root', root]);
  t.equal(res.code, 0, 'exit 0');
  t.same(counterLines(readFileSync(counter, 'utf8')), ['new CREATE']);
  const heatConfig = path.join(root, 'var/run/heat-config/heat-config');
  t.equal(statSync(heatConfig).mode & 0o777, 0o600);
  t.same(
    (JSON.parse(readFileSync(heatConfig, 'utf8')) as Array<{ id: string }>).map((d) => d.id),
    ['new'],
  );
});

t.test('input problems: no cache, a heat-config file that is not a list', async (t) => {
  const root = t.testdir({ 'bad.json': '{"id": "x"}', 'empty.json': '' });
  const none = await run(['deploy', '--root', root]);
  t.equal(none.code, 1);
  t.match(
    none.stderr,
    /os-config-agent: cannot read \/var\/lib\/os-collect-config\/os_config_files\.json .* \[ERR_METADATA\]/,
  );
  const bad = await run(['deploy', '--root', root, '--heat-config', '/bad.json']);
  t.equal(bad.code, 1);
  t.match(bad.stderr, 'does not hold a JSON list of deployments [ERR_METADATA]');
  const empty = await run(['deploy', '--root', root, '--heat-config', '/empty.json']);
  t.equal(empty.code, 0, 'an empty heat-config file means nothing to do');
});

t.test('--rerun and --forget: exit 0, 2 for an unknown id, 2 for both at once', async (t) => {
  const root = t.testdir();
  installHooks(root);
  const sink = await startSignalSink();
  t.teardown(() => sink.close());
  const counter = path.join(root, 'runs.txt');
  const file = path.join(root, 'etc/heat-config.json');
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(
    file,
    JSON.stringify([deployment({ id: 'r1', config: { counter }, signal: sink.inputs('CFN_SIGNAL', 'r1', 'r1') })]),
  );
  const hc = ['--root', root, '--heat-config', '/etc/heat-config.json'];
  t.equal((await run(['deploy', ...hc])).code, 0);
  const rerun = await run(['deploy', ...hc, '--rerun', 'r1']);
  t.equal(rerun.code, 0, 'rerun exit 0');
  t.same(counterLines(readFileSync(counter, 'utf8')), ['r1 CREATE', 'r1 CREATE']);
  t.equal(sink.countFor('r1'), 2, 'signalled again');
  t.ok(logLines(rerun.stderr).some((l) => l.to === 'pending' && l.reason === 'deploy --rerun' && l.reruns === 1));

  const unknown = await run(['deploy', ...hc, '--rerun', 'nope']);
  t.equal(unknown.code, 2, 'unknown id: exit 2');
  t.match(unknown.stderr, 'os-config-agent: no deployment nope is known here');
  t.match(unknown.stderr, '[ERR_DEPLOYMENT_UNKNOWN]');
  t.equal((await run(['deploy', '--root', root, '--forget', 'nope'])).code, 2);
  t.equal((await run(['deploy', ...hc, '--rerun', 'r1', '--forget', 'r1'])).code, 2, 'both at once: usage error');

  const forget = await run(['deploy', '--root', root, '--forget', 'r1']);
  t.equal(forget.code, 0, 'forget exit 0');
  t.ok(
    logLines(forget.stderr).some(
      (l) => l.msg === 'deployment forgotten: the next pass runs it as new if the metadata lists it',
    ),
  );
  t.equal((await run(['deploy', ...hc])).code, 0);
  t.equal(counterLines(readFileSync(counter, 'utf8')).length, 3, 'run as new after the forget');
  t.equal(sink.countFor('r1'), 3);
});
