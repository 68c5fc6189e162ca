import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { enqueueSignal } from '../../src/signals/cfn-signal-queue/files.js';
import { signalQueueDir } from '../../src/state/signal-queue-paths.js';
import { installBuiltinHooks, runBundle } from '../helpers/bundle.js';
import { deployConfig, deployment, HOOKS_DIR } from '../helpers/deploy-fixtures.js';
import { startSignalSink } from '../helpers/signal-sink.js';

// `os-config-agent collect-logs` as an operator runs it on a server that had trouble: a deployment with a secret
// input whose signal is still pending (a HEAT_SIGNAL: Keystone password in its record), a cfn-signal queued with a
// signed URL and a native one with a token, secrets in the configuration, and a journal that holds some of them (the
// journal is a recording fake journalctl on PATH, since no systemd runs here). Every planted secret is looked for in
// every file of the tarball.

function walk(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) walk(full, out);
    else out.push(full);
  }
  return out;
}

t.test('one tarball: status, doctor, journal, configuration, records, versions; no secret in any of it', async (t) => {
  const root = t.testdir();
  const secrets = {
    heatPassword: 'HeatPw-7d1c0a55',
    cfnKey: 'CfnKey-98e1b3f2',
    zaqarPassword: 'ZaqarPw-5a4b3c2d',
    dbPassword: 'DbPw-2f9c1e77',
    queuedSignature: 'QueuedSig-6b2d9e41',
    queuedToken: 'QueuedTok-0e7f3a19',
  };
  mkdirSync(path.join(root, 'etc'), { recursive: true });
  writeFileSync(
    path.join(root, 'etc/os-collect-config.conf'),
    [
      '# the operator wrote this comment',
      '[DEFAULT]',
      'collectors = local',
      '[heat]',
      'user_id = u1',
      `password = ${secrets.heatPassword}`,
      'auth_url = http://127.0.0.1:1/v3',
      '[cfn]',
      'access_key_id = AKID',
      `secret_access_key = ${secrets.cfnKey}`,
      '[zaqar]',
      `password = ${secrets.zaqarPassword}`,
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  installBuiltinHooks(path.join(root, HOOKS_DIR));
  const sink = await startSignalSink();
  t.teardown(() => sink.close());
  sink.answers = [503];
  writeFileSync(
    path.join(root, 'hc.json'),
    JSON.stringify([
      deployment({
        id: 'd-1',
        name: 'app',
        group: 'script',
        config: '#!/bin/sh\necho "connecting with $db_password" >&2\n',
        inputs: [{ name: 'db_password', value: secrets.dbPassword }],
        signal: sink.inputs('HEAT_SIGNAL', 'd-1', 'app'),
      }),
    ]),
  );
  t.equal((await runBundle(['deploy', '--root', root, '--heat-config', '/hc.json'])).code, 0);
  const loaded = await deployConfig(root);
  const queue = signalQueueDir(loaded.config);
  await enqueueSignal(
    queue,
    {
      kind: 'cfn',
      url: `http://127.0.0.1:1/v1/signal/x?Signature=${secrets.queuedSignature}&AWSAccessKeyId=AK`,
      text: '{}',
    },
    Date.now(),
  );
  await enqueueSignal(
    queue,
    { kind: 'native', url: 'http://127.0.0.1:1/v1/wc', token: secrets.queuedToken, text: '{"status":"SUCCESS"}' },
    Date.now(),
  );
  const fakeBin = path.join(root, 'fake-bin');
  mkdirSync(fakeBin);
  writeFileSync(
    path.join(fakeBin, 'journalctl'),
    `#!/bin/sh\necho "journalctl $*" >> '${path.join(root, 'journalctl-calls')}'\n` +
      `echo '2026-02-01T10:00:00+00:00 host os-config-agent[1]: {"level":"warn","msg":"hook said ${secrets.dbPassword} and ${secrets.heatPassword}"}'\n`,
  );
  chmodSync(path.join(fakeBin, 'journalctl'), 0o755);

  const tarball = path.join(root, 'support.tar.gz');
  const r = await runBundle(['collect-logs', '--root', root, '--tarfile', tarball, '--doctor-timeout', '2'], {
    env: { ...process.env, PATH: `${fakeBin}:${process.env.PATH ?? ''}` },
  });
  t.equal(r.code, 0, r.stderr);
  t.equal(r.stdout, `${tarball}\n`);
  t.match(r.stderr, /wrote .*support\.tar\.gz \(\d+ files\); secrets are replaced by \[REDACTED\]/);
  t.equal(statSync(tarball).mode & 0o777, 0o600, 'the tarball is 0600');
  t.match(readFileSync(path.join(root, 'journalctl-calls'), 'utf8'), /--unit os-config-agent\.service --boot 0/);

  const out = path.join(root, 'unpacked');
  mkdirSync(out);
  t.equal(spawnSync('tar', ['-xzf', tarball, '-C', out]).status, 0);
  const top = path.join(out, 'support');
  const files = walk(top).map((f) => path.relative(top, f));
  for (const name of [
    'status.json',
    'doctor.json',
    'journal.log',
    'versions.txt',
    'config/effective.json',
    'config/files/etc/os-collect-config.conf',
    'state/deployments/d-1.json',
    'state/deployed/d-1.json',
    'state/deployed/d-1.notify.json',
  ])
    t.ok(files.includes(name), `has ${name}`);
  t.equal(files.filter((f) => f.startsWith('state/signals/')).length, 2, 'both queued signals');
  const status = JSON.parse(readFileSync(path.join(top, 'status.json'), 'utf8')) as { result: { exitCode: number } };
  t.equal(status.result.exitCode, 2, 'status as --json prints it (a signal pending, no agent to send it)');
  t.match(JSON.parse(readFileSync(path.join(top, 'doctor.json'), 'utf8')), { version: 1, checks: [] });
  t.match(readFileSync(path.join(top, 'journal.log'), 'utf8'), /hook said \[REDACTED\] and \[REDACTED\]/);
  t.match(
    readFileSync(path.join(top, 'config/files/etc/os-collect-config.conf'), 'utf8'),
    /^# the operator wrote this comment\n[^]*^password = \[REDACTED\]$/m,
    'the file as written, its secrets replaced',
  );
  t.match(readFileSync(path.join(top, 'versions.txt'), 'utf8'), /^os-config-agent: \d+\.\d+\.\d+$/m);

  const everything = walk(top).map((f) => [path.relative(top, f), readFileSync(f, 'utf8')] as const);
  const planted = [...Object.values(secrets), sink.keystone.password];
  for (const secret of planted)
    for (const [name, text] of everything) t.notOk(text.includes(secret), `${name} holds no ${secret}`);
  const raw = spawnSync('sh', ['-c', `gzip -dc '${tarball}'`], { maxBuffer: 64 * 1024 * 1024 }).stdout.toString(
    'latin1',
  );
  for (const secret of planted) t.notOk(raw.includes(secret), `the tarball itself holds no ${secret}`);
});

t.test('a --root that is not there is a usage error; nothing is written', async (t) => {
  const root = t.testdir();
  const r = await runBundle([
    'collect-logs',
    '--root',
    path.join(root, 'nowhere'),
    '--tarfile',
    path.join(root, 'x.tgz'),
  ]);
  t.equal(r.code, 2);
  t.match(r.stderr, /is not a directory/);
  t.same(readdirSync(root), []);
});
