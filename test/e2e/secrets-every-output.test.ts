import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import t from 'tap';
import { runBundle, type BundleRun } from '../helpers/bundle.js';
import { killTree, prepareRoot, startDaemon, stopDaemon, until } from '../helpers/fault-daemon.js';
import { startOrchestrator } from '../helpers/orchestrator/orchestrator.js';

// The one secret rule (docs/security.md#secrets), checked on every output of a whole cycle. Secrets are planted
// everywhere an instance has them: configuration values (Keystone passwords, the CFN secret key, a Keystone URL with
// a password in its user-info, a request source whose URL carries a TempURL signature, a token and a password),
// deployment inputs named api_key, ssh_private_key and db_password (which the hooks print, on stdout and stderr, and
// hand back in outputs), an output named api_token, the pre-signed signal URL. The request source fails (its port is
// closed), and one deployment fails with its secrets on stderr, so error paths run too. Then every output is searched:
// the daemon's log lines, `status`, `status --json`, `status <id>` (text and --json) of each deployment, `doctor`,
// `doctor --json`, the collect-logs tarball, and what each command wrote on stderr. All traffic stays on loopback:
// the simulated orchestrator, and a closed loopback port for the failing source.

function walk(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) walk(full, out);
    else out.push(full);
  }
  return out;
}

/** A loopback port nothing listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const stamp = Date.now().toString(36);
const planted = {
  apiKey: `ApiKey-${stamp}-a1`,
  sshKey: `-----BEGIN OPENSSH PRIVATE KEY-----SshKey-${stamp}-b2`,
  dbPassword: `DbPw-${stamp}-c3`,
  outputToken: `OutTok-${stamp}-d4`,
  cfnSecret: `CfnSecret-${stamp}-e5`,
  zaqarPassword: `ZaqarPw-${stamp}-f6`,
  authUrlPassword: `AuthUrlPw-${stamp}-g7`,
  sourceSignature: `SourceSig-${stamp}-h8`,
  sourceToken: `SourceTok-${stamp}-i9`,
  sourcePassword: `SourcePw-${stamp}-j0`,
};

// The hook prints every secret input on both streams and hands them back: one output under a secret name, one under
// a plain name whose value holds a registered secret.
const HOOK_SCRIPT = (exit: number) =>
  [
    '#!/bin/sh',
    'echo "using api_key=$api_key key=$ssh_private_key db=$db_password"',
    'echo "stderr: db=$db_password key=$api_key" >&2',
    // What a hook may print that the agent only knows from elsewhere: an output's value, the configuration's secrets.
    `echo "issued ${planted.outputToken}"`,
    `echo "configured ${planted.authUrlPassword} ${planted.sourceSignature} ${planted.sourceToken} ${planted.sourcePassword}" >&2`,
    `printf '%s' '${planted.outputToken}' > "$heat_outputs_path.api_token"`,
    'printf \'%s\' "connected with $db_password" > "$heat_outputs_path.result"',
    `exit ${exit}`,
  ].join('\n');

t.test('no secret in any output of a whole cycle', async (t) => {
  const o = await startOrchestrator({ transport: 'POLL_SERVER_HEAT' });
  t.teardown(() => o.close());
  const port = await closedPort();
  const inputs = [
    { name: 'api_key', value: planted.apiKey },
    { name: 'ssh_private_key', value: planted.sshKey },
    { name: 'db_password', value: planted.dbPassword },
  ];
  const declared = [{ name: 'api_token' }, { name: 'result' }];
  const okId = o.addDeployment({
    name: 'app-ok',
    group: 'script',
    config: HOOK_SCRIPT(0),
    inputs,
    outputs: declared,
    signal: 'CFN_SIGNAL',
  });
  const failId = o.addDeployment({
    name: 'app-fails',
    group: 'script',
    config: HOOK_SCRIPT(3),
    inputs,
    outputs: declared,
    signal: 'HEAT_SIGNAL',
  });
  const sourceUrl =
    `http://src:${planted.sourcePassword}@127.0.0.1:${port}/md?temp_url_sig=${planted.sourceSignature}` +
    `&token=${planted.sourceToken}&temp_url_expires=1`;
  const root = prepareRoot(t.testdir(), o, {
    confd: [
      '[DEFAULT]',
      'collectors = request',
      '[agent]',
      'http_retries = 0',
      '[request]',
      `metadata_url = ${sourceUrl}`,
      'timeout = 2',
      '[cfn]',
      'access_key_id = AKID',
      `secret_access_key = ${planted.cfnSecret}`,
      '[zaqar]',
      'user_id = zuser',
      `password = ${planted.zaqarPassword}`,
      `auth_url = http://zuser:${planted.authUrlPassword}@127.0.0.1:${port}/v3`,
      '',
    ].join('\n'),
  });
  // No proxy: every request the commands make goes straight to loopback.
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of ['http_proxy', 'https_proxy', 'HTTP_PROXY', 'HTTPS_PROXY', 'no_proxy', 'NO_PROXY'])
    delete env[name];
  const d = startDaemon(root, { args: ['--debug'], env: env as Record<string, string> });
  t.teardown(async () => {
    if (d.alive()) await killTree(d);
  });
  await until('both deployments signalled', () =>
    [okId, failId].every((id) => o.signals.some((s) => s.deploymentId === id)),
  );
  await until('the request source failing', () => d.raw.some((l) => l.includes(String(port))));
  t.same(await stopDaemon(d), { code: 0, signal: null }, 'SIGTERM exits 0');

  const signalIds = (o.metadata().deployments as Array<{ inputs: Array<{ name: string; value: unknown }> }>)
    .flatMap((x) => x.inputs)
    .filter((i) => i.name === 'deploy_signal_id')
    .map((i) => new URL(String(i.value)).searchParams.get('Signature'))
    .filter((s): s is string => !!s);
  t.ok(signalIds.length >= 1, 'a signal URL with a signature');
  const secrets: Record<string, string> = {
    ...planted,
    heatPassword: o.creds.password,
    signalSignature: signalIds[0]!,
  };

  const outputs: Array<[string, string]> = [['daemon log', d.raw.join('\n')]];
  const run = async (what: string, args: string[]): Promise<BundleRun> => {
    const r = await runBundle([...args, '--root', root], { env, timeoutMs: 60_000 });
    outputs.push([`${what} (stdout)`, r.stdout], [`${what} (stderr)`, r.stderr]);
    return r;
  };
  const list = await run('status', ['status']);
  t.match(list.stdout, /app-fails/, 'status lists the deployments');
  const listJson = await run('status --json', ['status', '--json']);
  t.match(JSON.parse(listJson.stdout), { deployments: [] }, 'status --json is JSON');
  for (const [id, name] of [
    [okId, 'app-ok'],
    [failId, 'app-fails'],
  ] as const) {
    const one = await run(`status ${name}`, ['status', id]);
    t.match(one.stdout, /outputs:/, `status ${name} shows its outputs`);
    await run(`status ${name} --json`, ['status', id, '--json']);
  }
  const doctor = await run('doctor', ['doctor', '--timeout', '2']);
  t.match(doctor.stdout, /\S/, 'doctor reports');
  const doctorJson = await run('doctor --json', ['doctor', '--json', '--timeout', '2']);
  t.match(JSON.parse(doctorJson.stdout), { version: 1 }, 'doctor --json is JSON');

  // The bundle's journal is the daemon's own lines, through a recording fake journalctl (no systemd runs here).
  const fakeBin = path.join(root, '..', 'fake-bin');
  mkdirSync(fakeBin);
  writeFileSync(path.join(root, '..', 'journal.txt'), d.raw.join('\n'));
  writeFileSync(path.join(fakeBin, 'journalctl'), `#!/bin/sh\ncat '${path.join(root, '..', 'journal.txt')}'\n`);
  chmodSync(path.join(fakeBin, 'journalctl'), 0o755);
  const tarball = path.join(root, '..', 'support.tar.gz');
  const bundle = await runBundle(['collect-logs', '--root', root, '--tarfile', tarball, '--doctor-timeout', '2'], {
    env: { ...env, PATH: `${fakeBin}:${env.PATH ?? ''}` },
  });
  outputs.push(['collect-logs (stderr)', bundle.stderr]);
  t.equal(bundle.code, 0, bundle.stderr);
  const unpacked = path.join(root, '..', 'unpacked');
  mkdirSync(unpacked);
  t.equal(spawnSync('tar', ['-xzf', tarball, '-C', unpacked]).status, 0, 'the tarball unpacks');
  for (const file of walk(unpacked))
    outputs.push([`bundle ${path.relative(unpacked, file)}`, readFileSync(file, 'utf8')]);

  // The audit can fail: the secrets really are in what the agent keeps on disk (0600), and the outputs name them.
  t.ok(
    readFileSync(path.join(root, 'var/run/heat-config/heat-config'), 'utf8').includes(planted.apiKey),
    'the heat-config file holds the inputs',
  );
  t.ok(outputs.length > 20, `${outputs.length} outputs searched`);
  const leaks: string[] = [];
  for (const [where, text] of outputs)
    for (const [name, value] of Object.entries(secrets)) if (text.includes(value)) leaks.push(`${where}: ${name}`);
  t.same(leaks, [], 'no output holds a secret');
});
