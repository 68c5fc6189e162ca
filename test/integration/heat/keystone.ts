import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { answersHttp, freePort, runStep, startService, waitUntil, type Service } from './processes.js';

// Keystone from Debian's package, configured in the harness's directory: PostgreSQL database, fernet tokens, an
// in-process cache (without one every token validation costs seconds; the pickling backend, because the plain
// memory backend hands out shared objects that break ec2tokens), served by keystone-wsgi-public on 127.0.0.1.

export interface Keystone {
  readonly port: number;
  /** http://127.0.0.1:PORT/v3 */
  readonly url: string;
  readonly adminPassword: string;
  readonly service: Service;
}

export const SERVICE_ENV: NodeJS.ProcessEnv = {
  // Debian's interpreter and tools, whatever the caller's PATH holds (pyenv shims, for one).
  PATH: '/usr/sbin:/usr/bin:/sbin:/bin',
  LANG: 'C.UTF-8',
  LC_ALL: 'C.UTF-8',
};

export interface KeystoneSetup {
  readonly dir: string;
  readonly databaseUrl: string;
  readonly adminPassword: string;
}

export async function startKeystone(setup: KeystoneSetup): Promise<Keystone> {
  const { dir } = setup;
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/v3`;
  const conf = path.join(dir, 'keystone.conf');
  const env = { ...SERVICE_ENV, HOME: dir };
  writeFileSync(
    conf,
    [
      '[DEFAULT]',
      `log_file = ${path.join(dir, 'keystone-app.log')}`,
      'use_stderr = false',
      '[database]',
      `connection = ${setup.databaseUrl}`,
      '[token]',
      'provider = fernet',
      '[fernet_tokens]',
      `key_repository = ${path.join(dir, 'fernet-keys')}`,
      '[fernet_receipts]',
      `key_repository = ${path.join(dir, 'fernet-keys')}`,
      '[credential]',
      `key_repository = ${path.join(dir, 'credential-keys')}`,
      // Signed CFN signal URLs carry a timestamp that Keystone refuses after auth_ttl minutes; tests keep
      // URLs for a while, so allow a day.
      'auth_ttl = 1440',
      '[cache]',
      'enabled = true',
      'backend = dogpile.cache.memory_pickle',
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  const manage = (name: string, args: string[]) =>
    runStep({
      name: `keystone-manage ${name}`,
      command: 'keystone-manage',
      args: ['--config-file', conf, ...args],
      logFile: path.join(dir, 'keystone-manage.log'),
      env,
      cwd: dir,
      timeoutMs: 120_000,
    });
  await manage('db_sync', ['db_sync']);
  const ids = ['--keystone-user', String(process.getuid?.() ?? 0), '--keystone-group', String(process.getgid?.() ?? 0)];
  await manage('fernet_setup', ['fernet_setup', ...ids]);
  await manage('credential_setup', ['credential_setup', ...ids]);
  await manage('bootstrap', [
    'bootstrap',
    '--bootstrap-password',
    setup.adminPassword,
    '--bootstrap-admin-url',
    `${url}/`,
    '--bootstrap-internal-url',
    `${url}/`,
    '--bootstrap-public-url',
    `${url}/`,
    '--bootstrap-region-id',
    'RegionOne',
  ]);
  const service = startService({
    name: 'keystone',
    command: 'keystone-wsgi-public',
    args: ['--host', '127.0.0.1', '--port', String(port), '--', '--config-file', conf],
    logFile: path.join(dir, 'keystone.log'),
    env,
    cwd: dir,
  });
  await waitUntil('Keystone to answer', () => answersHttp(`${url}/`), 60_000, service);
  return { port, url, adminPassword: setup.adminPassword, service };
}
