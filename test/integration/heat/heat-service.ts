import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { SERVICE_ENV } from './keystone.js';
import { answersHttp, runStep, startService, waitUntil, type Service } from './processes.js';

// heat-all (engine, native API and CFN API in one process, no message broker: transport_url = fake://) from Debian's
// package, configured in the harness's directory. Every URL Heat hands out or calls is 127.0.0.1 with private ports.

export interface HeatSetup {
  readonly dir: string;
  readonly databaseUrl: string;
  readonly keystoneUrl: string;
  /** [ec2authtoken] auth_uri: the service-token bridge in front of Keystone. */
  readonly ec2AuthUrl: string;
  readonly apiPort: number;
  readonly cfnPort: number;
  readonly heatPassword: string;
  readonly domainAdminPassword: string;
}

export function writeHeatConf(setup: HeatSetup): string {
  const conf = path.join(setup.dir, 'heat.conf');
  const keystoneRoot = setup.keystoneUrl.replace(/\/v3\/?$/, '');
  const pasteIni = '/etc/heat/api-paste.ini';
  if (!existsSync(pasteIni))
    throw new Error(`${pasteIni} is missing: is heat-api installed? run test/integration/heat/install.sh`);
  const serviceAuth = [
    'auth_type = password',
    `auth_url = ${keystoneRoot}`,
    'username = heat',
    `password = ${setup.heatPassword}`,
    'user_domain_name = Default',
  ];
  writeFileSync(
    conf,
    [
      '[DEFAULT]',
      `log_file = ${path.join(setup.dir, 'heat-app.log')}`,
      'use_stderr = false',
      'transport_url = fake://',
      `heat_metadata_server_url = http://127.0.0.1:${setup.cfnPort}`,
      `heat_waitcondition_server_url = http://127.0.0.1:${setup.cfnPort}/v1/waitcondition`,
      'stack_user_domain_name = heat',
      'stack_domain_admin = heat_domain_admin',
      `stack_domain_admin_password = ${setup.domainAdminPassword}`,
      'deferred_auth_method = trusts',
      'num_engine_workers = 1',
      'region_name_for_services = RegionOne',
      // The compute endpoint is a stub that answers server lookups only: no microversion discovery.
      'max_nova_api_microversion = 2.1',
      // 32 characters: Heat encrypts stored credentials with it.
      'auth_encryption_key = oca-real-heat-integration-tests!',
      // After one resource fails, its still-running siblings are cancelled within 5 s, not the default 240 s.
      'error_wait_time = 5',
      '[paste_deploy]',
      `api_paste_config = ${pasteIni}`,
      '[database]',
      `connection = ${setup.databaseUrl}`,
      '[keystone_authtoken]',
      `www_authenticate_uri = ${setup.keystoneUrl}`,
      ...serviceAuth,
      'project_name = service',
      'project_domain_name = Default',
      '[trustee]',
      ...serviceAuth,
      '[clients_keystone]',
      `auth_uri = ${keystoneRoot}`,
      '[ec2authtoken]',
      `auth_uri = ${setup.ec2AuthUrl}`,
      '[heat_api]',
      'bind_host = 127.0.0.1',
      `bind_port = ${setup.apiPort}`,
      'workers = 1',
      '[heat_api_cfn]',
      'bind_host = 127.0.0.1',
      `bind_port = ${setup.cfnPort}`,
      'workers = 1',
      '[heat_all]',
      'enabled_services = engine,api,api_cfn',
      '[oslo_messaging_notifications]',
      'driver = noop',
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  return conf;
}

export async function syncHeatDatabase(dir: string, conf: string): Promise<void> {
  await runStep({
    name: 'heat-manage db_sync',
    command: 'heat-manage',
    args: ['--config-file', conf, 'db_sync'],
    logFile: path.join(dir, 'heat-manage.log'),
    env: { ...SERVICE_ENV, HOME: dir },
    cwd: dir,
    timeoutMs: 180_000,
  });
}

export async function startHeat(setup: HeatSetup, conf: string): Promise<Service> {
  const service = startService({
    name: 'heat-all',
    command: 'heat-all',
    args: ['--config-file', conf],
    logFile: path.join(setup.dir, 'heat-all.log'),
    env: { ...SERVICE_ENV, HOME: setup.dir },
    cwd: setup.dir,
  });
  await waitUntil('heat-api to answer', () => answersHttp(`http://127.0.0.1:${setup.apiPort}/`), 120_000, service);
  await waitUntil('heat-api-cfn to answer', () => answersHttp(`http://127.0.0.1:${setup.cfnPort}/`), 60_000, service);
  return service;
}
