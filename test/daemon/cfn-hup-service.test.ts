import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { startCfnServer } from '../helpers/cfn-server.js';
import { startDaemon, stopDaemon, until, type Daemon } from '../helpers/fault-daemon.js';

// The daemon's built-in cfn-hup: the built bundle started as the unit starts it, under --root, with a loopback-only
// configuration (the local collector) and /etc/cfn/cfn-hup.conf naming a loopback heat-api-cfn. No cron line: the
// daemon checks every `interval` minutes (here 0.05, 3 s), fires the hooks, survives a hanging action and a broken
// hooks.d file (the last good configuration stays in force), and goes on polling.

const INTERVAL_MINUTES = 0.05;

t.test('checks the hooks on its own loop; a broken file or a hanging action never stops it', async (t) => {
  const server = await startCfnServer();
  t.teardown(() => server.close());
  const serve = (marker: string) =>
    server.resources.set('web', JSON.stringify({ 'AWS::CloudFormation::Init': { config: { marker } } }));
  serve('v1');
  const root = t.testdir({
    etc: {
      'os-collect-config.conf':
        '[DEFAULT]\ncommand = true\ncollectors = local\npolling_interval = 1\nmin_polling_interval = 1\n[agent]\nnative_pipeline = false\nlog_level = debug\n',
      cfn: {
        'cfn-hup.conf': `[main]\nstack=${server.stackName}\ncredential-file=/etc/cfn/cfn-credentials\ninterval=${INTERVAL_MINUTES}\n`,
        'cfn-credentials': `AWSAccessKeyId=${server.accessKey}\nAWSSecretKey=${server.secret}\n`,
        'hooks.d': {},
      },
    },
    var: { lib: { 'heat-cfntools': { 'cfn-metadata-server': `${server.url}/v1/\n` } } },
  });
  const fired = path.join(root, 'fired');
  const hooks = path.join(root, 'etc/cfn/hooks.conf');
  writeFileSync(
    hooks,
    `[reload]\ntriggers=post.add,post.update\npath=Resources.web.Metadata.AWS::CloudFormation::Init\naction=echo "fired $(date +%%s%%N)" >> ${fired}\nrunas=root\n`,
  );
  mkdirSync(path.join(root, 'var/lib/os-collect-config/local-data'), { recursive: true, mode: 0o700 });
  const daemon: Daemon = startDaemon(root);
  t.teardown(() => stopDaemon(daemon));
  const firedCount = () => (existsSync(fired) ? readFileSync(fired, 'utf8').split('\n').filter(Boolean).length : 0);
  const has = (msg: string) => daemon.lines.some((l) => l.msg === msg);

  await until('the first check fired the hook', () => firedCount() === 1, 30_000);
  t.ok(has('cfn-hup configuration found; checking its hooks'));
  await until(
    "the action's line in the agent's log, component cfn-hup",
    () => daemon.lines.some((l) => l.msg === 'hook action succeeded' && l.component === 'cfn-hup'),
    30_000,
  );
  serve('v2');
  await until('a change fired it again', () => firedCount() === 2, 30_000);

  // A broken hooks.d file: reported once, the last good configuration stays in force.
  writeFileSync(path.join(root, 'etc/cfn/hooks.d/broken.conf'), '[x]\nnot a key value line\n');
  await until(
    'the broken file reported',
    () => has('cfn-hup configuration unusable; keeping the last good one'),
    30_000,
  );
  serve('v3');
  await until('a change still fires the good hook', () => firedCount() === 3, 30_000);
  t.equal(
    daemon.lines.filter((l) => l.msg === 'cfn-hup configuration unusable; keeping the last good one').length,
    1,
    'an unchanged problem is reported once',
  );
  rmSync(path.join(root, 'etc/cfn/hooks.d/broken.conf'));
  await until('the configuration usable again', () => has('cfn-hup configuration usable again'), 30_000);

  // A hanging action is killed at its timeout; the checks go on.
  writeFileSync(
    path.join(root, 'etc/cfn/hooks.d/hang.conf'),
    '[hang]\ntriggers=post.update\npath=Resources.web.Metadata\naction=sleep 300\nrunas=root\ntimeout=1\n',
  );
  // The new hook takes the metadata it first sees as its baseline (post.update fires on a change after that): the
  // change comes only after a whole check has read the new file.
  const checks = () => daemon.lines.filter((l) => l.msg === 'cfn-hup check done').length;
  const before = checks();
  await until('a whole check with the new hook', () => checks() >= before + 2, 30_000);
  serve('v4');
  await until('the hanging action killed', () => has('hook action timed out and was killed'), 30_000);
  await until('the good hook fired for the same change', () => firedCount() === 4, 30_000);
  serve('v5');
  await until('the next change is checked as usual', () => firedCount() === 5, 30_000);
  t.ok(daemon.alive(), 'the daemon runs on');
  t.ok(has('no changes detected'), 'and polls its sources meanwhile');
  const exit = await stopDaemon(daemon);
  t.equal(exit.code, 0, 'it stops cleanly', { output: daemon.raw.slice(-20).join('\n') });
  t.notMatch(daemon.raw.join('\n'), server.secret, 'the secret key is in no log line');
});
