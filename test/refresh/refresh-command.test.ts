import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { BUNDLE, requireBundle } from '../helpers/bundle.js';
import { traceScript, writeScript } from './phase-fixtures.js';

// src/cli/refresh-command.ts through the built bundle: `os-config-agent refresh` under --root and the compatibility
// name `os-refresh-config`.

function compat(dir: string): string {
  const link = path.join(dir, 'os-refresh-config.mjs');
  if (!existsSync(link)) symlinkSync(BUNDLE, link);
  return link;
}

const ENV = { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8' };

t.test('os-config-agent refresh: base dir and lock under --root, [refresh] options, JSON logs on stdout', async (t) => {
  requireBundle();
  const root = t.testdir({});
  const trace = path.join(root, 'trace');
  const conf = path.join(root, 'agent.conf');
  writeFileSync(conf, '[refresh]\nbase_dir = /srv/orc\n');
  writeScript(path.join(root, 'srv/orc/configure.d/10-a'), traceScript(trace, { extra: 'echo to-stdout' }));
  const r = spawnSync(process.execPath, [BUNDLE, 'refresh', '--root', root, '--config-file', '/agent.conf'], {
    env: ENV,
    encoding: 'utf8',
  });
  t.equal(r.status, 0, r.stderr);
  t.same(readFileSync(trace, 'utf8').trim().split('\n'), ['configure.d/10-a']);
  t.ok(existsSync(path.join(root, 'var/run/os-refresh-config.lock')), 'lock file mapped under the root');
  const logs = r.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  t.ok(
    logs.some((l) => l.msg === 'script finished' && l.script === '10-a' && l.phase === 'configure' && l.exitCode === 0),
  );
  t.match(r.stderr, /to-stdout/, 'script output goes to stderr');
  const base = spawnSync(
    process.execPath,
    [BUNDLE, 'refresh', '--root', root, '--config-file', '/agent.conf', '--print-base'],
    { env: ENV, encoding: 'utf8' },
  );
  t.equal(base.stdout, `${path.join(root, 'srv/orc')}\n`);
});

t.test('os-refresh-config: failure exits 1 and names the script; --timeout must be a number', async (t) => {
  requireBundle();
  const dir = t.testdir({});
  const base = path.join(dir, 'base');
  mkdirSync(base);
  writeScript(path.join(base, 'configure.d/10-fail'), '#!/bin/sh\nexit 6\n');
  const env = { ...ENV, HOME: dir, OS_REFRESH_CONFIG_BASE_DIR: base };
  const r = spawnSync(process.execPath, [compat(dir), '--lockfile', path.join(dir, 'l')], { env, encoding: 'utf8' });
  t.equal(r.status, 1);
  t.match(r.stderr, /10-fail exited with status 6 \[ERR_PHASE_FAILED\]/);
  t.equal(spawnSync(process.execPath, [compat(dir), '--timeout', 'soon'], { env, encoding: 'utf8' }).status, 2);
  const p = spawnSync(process.execPath, [compat(dir), '--print-base'], { env, encoding: 'utf8' });
  t.equal(p.stdout, `${base}\n`);
  t.equal(p.status, 0);
});
