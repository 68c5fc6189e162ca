import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { agentHttpOptions } from '../../src/cli/command-http.js';
import { loadConfig } from '../../src/config/load.js';
import type { CheckResult, DoctorReport } from '../../src/doctor/check.js';
import { runDoctor } from '../../src/doctor/run-doctor.js';
import { createLazyHttpClient } from '../../src/http/lazy-client.js';
import { createLogger } from '../../src/log/logger.js';
import { startCfnServer } from '../helpers/cfn-server.js';
import { startEc2Server } from '../helpers/ec2-server.js';
import { startHeatServer } from '../helpers/heat-server.js';
import { refusedUrl, startTestServer, type TapTest } from '../helpers/http-test-server.js';
import { startKeystoneServer } from '../helpers/keystone-server.js';
import { startTinyproxy, tinyproxyMissing } from '../helpers/tinyproxy.js';
import { startZaqarServer } from '../helpers/zaqar-server.js';

// doctor against real loopback servers that check requests as the real services do: Keystone (password login),
// Heat (token), heat-api-cfn (signature v2), Zaqar (token, client id), an EC2 metadata service, a plain URL, and
// Debian's tinyproxy. The HTTP client is built as the `doctor` command builds it (the daemon's wiring, no retries).

const quiet = createLogger({ level: 'silent' });

async function doctor(
  t: TapTest,
  conf: string,
  options: { env?: NodeJS.ProcessEnv; timeoutMs?: number; files?: Record<string, string> } = {},
): Promise<{ report: DoctorReport; byId: (id: string) => CheckResult; root: string }> {
  const root = t.testdir();
  mkdirSync(path.join(root, 'etc'), { recursive: true });
  writeFileSync(path.join(root, 'etc/os-collect-config.conf'), conf, { mode: 0o600 });
  for (const [file, text] of Object.entries(options.files ?? {})) {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), text);
  }
  const loaded = await loadConfig({ root, configFiles: ['/etc/os-collect-config.conf'] });
  const http = createLazyHttpClient({ ...agentHttpOptions(loaded, quiet), defaultRetries: 0 });
  const report = await runDoctor({
    loaded,
    http,
    log: quiet,
    env: options.env ?? { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    timeoutMs: options.timeoutMs ?? 5000,
  });
  const byId = (id: string): CheckResult => {
    const found = report.checks.find((c) => c.id === id);
    if (!found) throw new Error(`no check ${id} in ${JSON.stringify(report.checks.map((c) => c.id))}`);
    return found;
  };
  return { report, byId, root };
}

async function services(t: TapTest) {
  const ks = await startKeystoneServer();
  t.teardown(() => ks.close());
  const heat = await startHeatServer(ks);
  t.teardown(() => heat.close());
  const zaqar = await startZaqarServer(ks);
  t.teardown(() => zaqar.close());
  ks.catalog = [
    { type: 'orchestration', endpoints: [{ interface: 'public', region: 'RegionOne', url: heat.endpoint }] },
    { type: 'messaging', endpoints: [{ interface: 'public', region: 'RegionOne', url: zaqar.endpoint }] },
  ];
  heat.resources.set('server', { deployments: [] });
  zaqar.post('q1', { deployments: [] });
  const cfn = await startCfnServer();
  t.teardown(() => cfn.close());
  cfn.resources.set('server', JSON.stringify({ deployments: [] }));
  const ec2 = await startEc2Server();
  t.teardown(() => ec2.close());
  const doc = await startTestServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"deployments": []}');
  });
  t.teardown(() => doc.close());
  const keystone = (section: string, password = ks.password) =>
    `[${section}]\nauth_url = ${ks.authUrl}\nuser_id = ${ks.userId}\npassword = ${password}\nproject_id = ${ks.projectId}\nregion_name = RegionOne\n`;
  const conf = (over: { heatPassword?: string; cfnSecret?: string; requestUrl?: string } = {}) =>
    [
      '[DEFAULT]\ncollectors = ec2\ncollectors = cfn\ncollectors = heat\ncollectors = request\ncollectors = zaqar\n',
      `[ec2]\nmetadata_url = ${ec2.metadataUrl}\n`,
      `[cfn]\nmetadata_url = ${cfn.metadataUrl}\naccess_key_id = ${cfn.accessKey}\nsecret_access_key = ${over.cfnSecret ?? cfn.secret}\nstack_name = ${cfn.stackName}\npath = server.Metadata\n`,
      `${keystone('heat', over.heatPassword)}stack_id = ${heat.stackName}/${heat.stackId}\nresource_name = server\n`,
      `[request]\nmetadata_url = ${over.requestUrl ?? `${doc.url}/doc`}\n`,
      `${keystone('zaqar')}queue_id = q1\n`,
    ].join('');
  return { ks, heat, zaqar, cfn, ec2, doc, conf };
}

t.test('every source up and every credential good: all checks ok, exit 0, nothing consumed', async (t) => {
  const s = await services(t);
  // With a token cache configured: doctor neither reads it (the password must be tried) nor writes to it.
  const { report, byId, root } = await doctor(
    t,
    `${s.conf()}[keystone]\ncache_dir = /var/lib/os-collect-config/keystone\n`,
  );
  for (const id of [
    'config',
    'source.ec2',
    'source.cfn',
    'credentials.heat',
    'source.heat',
    'source.request',
    'credentials.zaqar',
    'source.zaqar',
    'clock',
  ]) {
    t.equal(byId(id).verdict, 'ok', `${id}: ${byId(id).cause}`);
  }
  t.equal(report.result, 'ok');
  t.match(byId('source.cfn').cause, /accepted the signed request/);
  t.match(byId('credentials.heat').cause, /issued a token/);
  t.equal(s.zaqar.queues.get('q1')?.length, 1, 'the Zaqar message is still queued (stats asked, nothing popped)');
  t.same(s.cfn.verdicts, [true], 'one signed request, accepted');
  t.notOk(
    existsSync(path.join(root, 'var/lib/os-collect-config/keystone')),
    'no token written to [keystone] cache_dir',
  );
  t.equal(s.ks.tokensIssued(), 3, 'real logins: credentials.heat, the heat collector, credentials.zaqar');
  t.notMatch(JSON.stringify(report), new RegExp(`${s.ks.password}|${s.cfn.secret}`), 'no secret in the report');
});

t.test('broken credentials: a refused Keystone password and a bad CFN secret fail, naming what to fix', async (t) => {
  const s = await services(t);
  const { report, byId } = await doctor(
    t,
    s.conf({ heatPassword: 'wrong-pass-123', cfnSecret: 'wrong-cfn-secret-456' }),
  );
  t.equal(report.result, 'fail');
  t.equal(byId('credentials.heat').verdict, 'fail');
  t.match(byId('credentials.heat').cause, /refused the credentials \(401\)$/, 'the advice is given once, in the fix');
  t.match(byId('credentials.heat').fix, /\[heat\] user_id, password and project_id/);
  t.equal(byId('source.heat').verdict, 'skipped', 'Heat is not asked without a token');
  t.equal(byId('source.cfn').verdict, 'fail');
  t.match(byId('source.cfn').fix, /\[cfn\] access_key_id and secret_access_key/);
  t.equal(byId('credentials.zaqar').verdict, 'ok', "the other section's credentials are judged on their own");
  t.notMatch(JSON.stringify(report), /wrong-pass-123|wrong-cfn-secret-456/, 'the wrong secrets are not shown either');
});

t.test(
  'a stopped endpoint and a hanging one fail within the deadline; the other checks still answer',
  { timeout: 30_000 },
  async (t) => {
    const s = await services(t);
    const hanging = await startTestServer(() => {
      // Never answers.
    });
    t.teardown(() => hanging.close());
    const stopped = await doctor(t, s.conf({ requestUrl: `${await refusedUrl()}/doc` }));
    t.equal(stopped.byId('source.request').verdict, 'fail');
    t.match(stopped.byId('source.request').cause, /ECONNREFUSED|refused/i);
    t.match(stopped.byId('source.request').fix, /up and reachable/);
    t.equal(stopped.byId('source.heat').verdict, 'ok');

    const hung = await doctor(t, s.conf({ requestUrl: `${hanging.url}/doc` }), { timeoutMs: 1000 });
    t.equal(hung.byId('source.request').verdict, 'fail');
    t.match(hung.byId('source.request').cause, /timed out|did not answer within 1 s/i);
    t.equal(hung.byId('source.cfn').verdict, 'ok');
    t.equal(hung.report.result, 'fail');
  },
);

t.test(
  'requests go through the proxy in force: tinyproxy carries them; a dead proxy fails the check',
  { skip: tinyproxyMissing() },
  async (t) => {
    const doc = await startTestServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
    t.teardown(() => doc.close());
    const proxyDir = mkdtempSync(path.join(os.tmpdir(), 'oca-doctor-proxy-'));
    t.teardown(() => rmSync(proxyDir, { recursive: true, force: true }));
    const proxy = await startTinyproxy(proxyDir);
    t.teardown(() => proxy.stop());
    const conf = (proxyUrl: string) =>
      `[DEFAULT]\ncollectors = request\n[request]\nmetadata_url = ${doc.url}/doc\n[agent]\nhttp_proxy = ${proxyUrl}\n`;
    const through = await doctor(t, conf(proxy.url));
    t.equal(through.byId('source.request').verdict, 'ok', through.byId('source.request').cause);
    t.same(proxy.requests(), [`GET ${doc.url}/doc HTTP/1.1`], 'the request went through tinyproxy');
    const dead = await doctor(t, conf(await refusedUrl()));
    t.equal(dead.byId('source.request').verdict, 'fail', 'a proxy that is down fails the check: the proxy is in force');
    t.equal(doc.requests.length, 1, 'nothing went around the proxy');
  },
);

t.test('clock skew: a server whose Date is 20 minutes ahead fails the clock check; 6 minutes warns', async (t) => {
  let offsetMs = 0;
  const doc = await startTestServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', date: new Date(Date.now() + offsetMs).toUTCString() });
    res.end('{}');
  });
  t.teardown(() => doc.close());
  const conf = `[DEFAULT]\ncollectors = request\n[request]\nmetadata_url = ${doc.url}/doc\n`;
  offsetMs = 20 * 60_000;
  const far = await doctor(t, conf);
  t.equal(far.byId('clock').verdict, 'fail');
  t.match(far.byId('clock').cause, /behind .*more than 15 minutes/);
  t.equal(far.report.result, 'fail');
  offsetMs = -6 * 60_000;
  const near = await doctor(t, conf);
  t.equal(near.byId('clock').verdict, 'warn');
  t.match(near.byId('clock').cause, /ahead of/);
});

t.test('hooks: each group in the cached deployments needs its hook, executable, and the tool it drives', async (t) => {
  const deployments = [
    { id: 'a', group: 'script', config: 'true' },
    { id: 'b', group: 'puppet', config: '' },
    { id: 'c', group: 'json-file', config: {} },
    { id: 'd', group: 'no-such-group', config: '' },
    { id: 'e', config: '' },
  ];
  const files = {
    'var/lib/os-collect-config/os_config_files.json': JSON.stringify(['/var/lib/os-collect-config/heat_local.json']),
    'var/lib/os-collect-config/heat_local.json': JSON.stringify({ deployments }),
    'hooks/script': '#!/bin/sh\n',
    'hooks/puppet': '#!/bin/sh\n',
    'hooks/json-file': '#!/bin/sh\n',
    'tools/fake-puppet': '#!/bin/sh\n',
  };
  const conf = '[DEFAULT]\ncollectors = local\n[deploy]\nhooks_dir = /hooks\n';
  const chmodHooks = (root: string, mode: number) => {
    for (const h of ['script', 'puppet']) chmodSync(path.join(root, 'hooks', h), mode);
  };
  const first = await doctor(t, conf, { files, env: { PATH: '/usr/bin:/bin' } });
  // Written before the run, the modes were 0644: nothing is executable.
  t.equal(first.byId('hook.script').verdict, 'fail');
  t.match(first.byId('hook.script').cause, /is not executable/);
  t.match(first.byId('hook.script').fix, /chmod 0755 \/hooks\/script/);

  const root = first.root;
  chmodHooks(root, 0o755);
  chmodSync(path.join(root, 'hooks/json-file'), 0o755);
  chmodSync(path.join(root, 'tools/fake-puppet'), 0o755);
  const loaded = await loadConfig({ root, configFiles: ['/etc/os-collect-config.conf'] });
  const run = (env: NodeJS.ProcessEnv) =>
    runDoctor({
      loaded,
      http: createLazyHttpClient({ ...agentHttpOptions(loaded, quiet), defaultRetries: 0 }),
      log: quiet,
      env,
      timeoutMs: 2000,
    });
  const byId = (r: DoctorReport, id: string) => r.checks.find((c) => c.id === id);

  // A PATH holding bash only (this machine may have puppet installed).
  mkdirSync(path.join(root, 'pathbin'));
  symlinkSync('/bin/bash', path.join(root, 'pathbin/bash'));
  const onlyBash = path.join(root, 'pathbin');
  const noPuppet = await run({ PATH: onlyBash });
  t.equal(byId(noPuppet, 'hook.script')?.verdict, 'ok', byId(noPuppet, 'hook.script')?.cause ?? 'missing');
  t.match(byId(noPuppet, 'hook.script')?.cause, /drives .*\/pathbin\/bash/);
  t.equal(byId(noPuppet, 'hook.puppet')?.verdict, 'fail');
  t.match(byId(noPuppet, 'hook.puppet')?.cause, /drives puppet, which is not installed/);
  t.match(byId(noPuppet, 'hook.puppet')?.fix, /HEAT_PUPPET_CMD/);
  t.equal(byId(noPuppet, 'hook.json-file')?.verdict, 'ok', 'json-file drives no program');
  t.equal(byId(noPuppet, 'hook.no-such-group')?.verdict, 'fail');
  t.match(byId(noPuppet, 'hook.no-such-group')?.cause, /no hook "no-such-group" in \/hooks/);
  t.equal(byId(noPuppet, 'hook.Heat::Ungrouped')?.verdict, 'ok', "ungrouped configs are the apply step's");
  t.equal(noPuppet.result, 'fail');

  const withPuppet = await run({ PATH: onlyBash, HEAT_PUPPET_CMD: path.join(root, 'tools/fake-puppet') });
  t.equal(byId(withPuppet, 'hook.puppet')?.verdict, 'ok', 'HEAT_PUPPET_CMD names the command');
});

t.test('hooks: the program doctor names is the one the hook would start there (fake tools on PATH)', async (t) => {
  const groups = ['kubelet', 'docker-cmd', 'docker-compose'];
  const files = {
    'var/lib/os-collect-config/os_config_files.json': JSON.stringify(['/var/lib/os-collect-config/heat_local.json']),
    'var/lib/os-collect-config/heat_local.json': JSON.stringify({
      deployments: groups.map((group) => ({ id: group, group, config: {} })),
    }),
  };
  const conf = '[DEFAULT]\ncollectors = local\n[deploy]\nhooks_dir = /hooks\n';
  const { root } = await doctor(t, conf, { files, env: { PATH: '/nonexistent' } });
  const loaded = await loadConfig({ root, configFiles: ['/etc/os-collect-config.conf'] });
  const tool = (dir: string, name: string, script: string) => {
    mkdirSync(path.join(root, dir), { recursive: true });
    writeFileSync(path.join(root, dir, name), `#!/bin/sh\n${script}\n`, { mode: 0o755 });
    return path.join(root, dir);
  };
  for (const group of groups) tool('hooks', group, 'exit 0');
  const run = async (dir: string) => {
    const report = await runDoctor({
      loaded,
      http: createLazyHttpClient({ ...agentHttpOptions(loaded, quiet), defaultRetries: 0 }),
      log: quiet,
      env: { PATH: dir },
      timeoutMs: 5000,
    });
    return (group: string) => report.checks.find((c) => c.id === `hook.${group}`)!;
  };

  // podman and nothing else: docker-cmd runs podman, the kubelet hook looks for docker only and fails.
  const podmanOnly = await run(tool('podman-only', 'podman', 'exit 125'));
  t.equal(podmanOnly('docker-cmd').verdict, 'ok');
  t.match(podmanOnly('docker-cmd').cause, /it drives .*\/podman-only\/podman/);
  t.equal(podmanOnly('kubelet').verdict, 'fail', 'the kubelet hook never uses podman');
  t.match(podmanOnly('kubelet').cause, /drives docker, which is not installed/);
  t.match(podmanOnly('kubelet').fix, /Install docker \(Debian: docker\.io\)\. Or set HEAT_DOCKER_CMD/);
  t.equal(podmanOnly('docker-compose').verdict, 'fail', 'podman without a compose subcommand, and no docker-compose');
  t.match(podmanOnly('docker-compose').cause, /drives "docker compose" or docker-compose, which is not installed/);

  // docker whose compose plugin answers `docker compose version`.
  const plugin = await run(tool('plugin', 'docker', '[ "$1 $2" = "compose version" ] && exit 0; exit 1'));
  t.equal(plugin('kubelet').verdict, 'ok');
  t.match(plugin('kubelet').cause, /it drives .*\/plugin\/docker, whose service \(the docker daemon/);
  t.equal(plugin('docker-compose').verdict, 'ok');
  t.match(plugin('docker-compose').cause, /it drives .*\/plugin\/docker compose/);

  // docker without the plugin: compose v1 when installed, as the hook falls back to it.
  tool('v1', 'docker', 'exit 1');
  const v1 = await run(tool('v1', 'docker-compose', 'exit 0'));
  t.match(v1('docker-compose').cause, /it drives .*\/v1\/docker-compose/);
  const neither = await run(tool('no-plugin', 'docker', 'exit 1'));
  t.equal(neither('docker-compose').verdict, 'fail', 'docker alone is not compose');
});

t.test('configuration problems and disk figures are reported', async (t) => {
  const { byId } = await doctor(t, '[DEFAULT]\ncollectors = local\nno_such_option = 1\n');
  t.equal(byId('config').verdict, 'warn');
  t.match(byId('config').cause, /no_such_option/);
  for (const id of ['disk.cachedir', 'disk.state_dir', 'disk.deployed_dir']) {
    t.not(byId(id).verdict, 'skipped', id);
    t.match(byId(id).cause, /MiB free of/);
  }
  t.equal(byId('source.ec2').verdict, 'skipped', 'a source not in collectors is skipped');
  t.equal(byId('hooks').verdict, 'skipped');
});

t.test(
  'ec2: the first metadata URL that answers settles it, a hanging one is not waited for; none answering fails',
  { timeout: 30_000 },
  async (t) => {
    const ec2 = await startEc2Server();
    t.teardown(() => ec2.close());
    const hanging = await startTestServer(() => {
      // Never answers.
    });
    t.teardown(() => hanging.close());
    const conf = (urls: readonly string[]) =>
      `[DEFAULT]\ncollectors = ec2\n[ec2]\ntimeout = 50\n${urls.map((u) => `metadata_urls = ${u}\n`).join('')}`;
    // Request timeout and deadline far beyond the test's own bound: an answer here did not wait for the hanging URL.
    const one = await doctor(t, conf([`${hanging.url}/latest/meta-data`, ec2.metadataUrl]), { timeoutMs: 60_000 });
    t.equal(one.byId('source.ec2').verdict, 'ok');
    t.match(one.byId('source.ec2').cause, new RegExp(`${ec2.url.replace(/[.]/g, '\\.')}.* answered 200`));
    const none = await doctor(t, conf([`${await refusedUrl()}/latest/meta-data`]));
    t.equal(none.byId('source.ec2').verdict, 'fail');
    t.match(
      none.byId('source.ec2').fix,
      /\[ec2\] metadata_url empty/,
      'on a cloud without a metadata service: how to turn it off',
    );
  },
);

t.test(
  'the trust rule: a hook another user replaced and heat_local data others can write fail, naming what to fix',
  { skip: process.getuid?.() !== 0 && 'needs root to chown to another user' },
  async (t) => {
    const { report, byId, root } = await doctor(t, '[DEFAULT]\ncollectors = heat_local\n', {
      files: {
        'var/lib/heat-config/hooks/script': '#!/bin/sh\n',
        'var/lib/heat-cfntools/cfn-init-data': '{"deployments": []}',
      },
    });
    t.equal(byId('trust.hooks_dir').verdict, 'ok', 'as installed');
    t.equal(byId('trust.heat_local').verdict, 'ok');
    t.equal(byId('trust.local').verdict, 'ok');
    t.match(byId('trust.local').cause, 'nothing there yet');
    t.equal(report.result, 'ok');

    const hook = path.join(root, 'var/lib/heat-config/hooks/script');
    chmodSync(hook, 0o777);
    chownSync(hook, 65534, 65534);
    const data = path.join(root, 'var/lib/heat-cfntools/cfn-init-data');
    chmodSync(path.dirname(data), 0o777);
    const loaded = await loadConfig({ root, configFiles: ['/etc/os-collect-config.conf'] });
    const again = await runDoctor({
      loaded,
      http: createLazyHttpClient({ ...agentHttpOptions(loaded, quiet), defaultRetries: 0 }),
      log: quiet,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      timeoutMs: 5000,
    });
    const check = (id: string) => again.checks.find((c) => c.id === id)!;
    t.equal(again.result, 'fail');
    t.equal(check('trust.hooks_dir').verdict, 'fail');
    t.match(
      check('trust.hooks_dir').cause,
      /^\/var\/lib\/heat-config\/hooks\/script is not trusted: is owned by user 65534, not by root or the agent's user; such a hook is not run$/,
    );
    t.match(check('trust.hooks_dir').fix, /chown root; chmod go-w/);
    t.match(
      check('trust.heat_local').cause,
      /^\/var\/lib\/heat-cfntools\/cfn-init-data is not trusted: \/var\/lib\/heat-cfntools is writable by others \(mode 0777\); the heat_local source is unavailable$/,
    );
  },
);
