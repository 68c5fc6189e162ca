import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { daemonHupCheck, type HupDaemonState } from '../../src/cfntools/hup-daemon.js';
import { createHttpClient } from '../../src/http/client.js';
import { createPathMapper } from '../../src/util/rooted-path.js';
import { startCfnServer } from '../helpers/cfn-server.js';
import { captureLog } from '../helpers/log-capture.js';

// The daemon's side of cfn-hup, in this process: a configuration problem is reported once and the last good
// configuration stays in force; the next check is due after the interval; lines go to the agent's logger.

t.test('last good configuration kept, a problem reported once, the interval honoured', async (t) => {
  const server = await startCfnServer();
  t.teardown(() => server.close());
  server.resources.set('web', JSON.stringify({ a: 1 }));
  const root = t.testdir();
  const write = (file: string, text: string) => {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), text);
  };
  const fired = path.join(root, 'fired');
  write('etc/cfn/cfn-hup.conf', `[main]\nstack=${server.stackName}\ncredential-file=/etc/cfn/c\ninterval=2\n`);
  write('etc/cfn/c', `AWSAccessKeyId=${server.accessKey}\nAWSSecretKey=${server.secret}\n`);
  write(
    'etc/cfn/hooks.conf',
    `[h]\ntriggers=post.add,post.update\npath=Resources.web.Metadata\naction=echo x >> ${fired}\n`,
  );
  const capture = captureLog();
  const state: HupDaemonState = {};
  const check = () =>
    daemonHupCheck(state, {
      paths: createPathMapper(root),
      env: { PATH: '/usr/bin:/bin' },
      http: createHttpClient({ defaultMaxBytes: 1 << 20, defaultRetries: 0 }),
      log: capture.log,
      signal: new AbortController().signal,
      configuredEndpoint: server.metadataUrl,
      timeoutSeconds: 5,
    });
  t.same(await check(), { nextInMs: 120_000 }, 'due again after the interval (2 minutes)');
  t.ok(
    capture.lines.some((l) => l.msg === 'hook action succeeded'),
    "the action's line in the agent's log",
  );
  write('etc/cfn/hooks.d/bad.conf', 'no section\n');
  server.resources.set('web', JSON.stringify({ a: 2 }));
  await check();
  await check();
  const reported = capture.lines.filter((l) => l.msg === 'cfn-hup configuration unusable; keeping the last good one');
  t.equal(reported.length, 1, 'reported once while unchanged');
  t.match(reported[0], { code: 'ERR_CFN_HUP_CONFIG', keeping: true });
  t.equal(
    capture.lines.filter((l) => l.msg === 'hook action succeeded').length,
    2,
    'the last good configuration fired the change',
  );
  rmSync(path.join(root, 'etc/cfn/hooks.d/bad.conf'));
  await check();
  t.ok(capture.lines.some((l) => l.msg === 'cfn-hup configuration usable again'));

  const fresh: HupDaemonState = {};
  rmSync(path.join(root, 'etc/cfn/hooks.conf'));
  const none = await daemonHupCheck(fresh, {
    paths: createPathMapper(root),
    env: {},
    http: createHttpClient({ defaultMaxBytes: 1 << 20, defaultRetries: 0 }),
    log: capture.log,
    signal: new AbortController().signal,
    timeoutSeconds: 5,
  });
  t.same(none, {}, 'no usable configuration ever: nothing due but the next look at the file');
  t.ok(capture.lines.some((l) => l.msg === 'cfn-hup configuration unusable' && l.keeping === false));
});
