import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { HeatClient, outputsOf, type Stack } from '../integration/heat/heat-client.js';
import type { RealHeat } from '../integration/heat/harness.js';
import { startHeatSession, stopHeatSession } from '../integration/heat/heat-session.js';
import { bootContainer, settleStack, unitNumber, type Container } from './container.js';
import {
  agentLines,
  debPackage,
  dpkgStatus,
  freshTree,
  HERE,
  missingForBoot,
  REPO,
  say,
  VERSION,
  WORK,
} from './pristine-tree.js';

// Issue 21's pristine-image boot against real Heat: a stock debootstrapped bookworm with cloud-init and nothing of
// ours (test/image/debootstrap-tree.sh) boots with systemd as PID 1 under systemd-nspawn. Its NoCloud seed carries
// the user-data OS::Nova::Server would send for `user_data_format: SOFTWARE_CONFIG` and `user_data: {get_attr:
// [boot_config, config]}` with boot-config/os-config-agent_deb_env.yaml — built by Heat's own code (pristine-heat.py:
// the stack request as python-heatclient makes it from the environment, and the user-data from
// NovaClientPlugin.build_userdata). At first boot cloud-final runs boot-config's script, which downloads the package
// from an HTTP server in this process on 127.0.0.1, checks its sha256, installs it with apt and queues the agent's
// start; the agent then configures itself from the cfn-init-data Heat's part-handler wrote earlier in the boot and
// takes the stack (a DeployedServer with a script deployment, templates-pristine/pristine.yaml) to CREATE_COMPLETE.
// Nothing is done inside by hand. Run through test/image/pristine-boot.sh.
//
// Added to the container, read-only from outside: the seed; an agent drop-in emptying `[ec2] metadata_url` (the
// package's configuration polls the built-in collector list, which includes the EC2 metadata service at
// 169.254.169.254, never to be asked from here; the first cycle's rewrite for Heat's transport keeps drop-ins); a
// cloud-init drop-in turning network configuration off (the container shares this machine's interfaces) and setting
// the locale to C.UTF-8 (minbase has no other generated); a journald drop-in copying the journal to the console log.

const ROOT = path.join(WORK, 'pristine-root');
const BOOT = path.join(WORK, 'pristine-boot');
const STACK = 'pristine';
const HOSTNAME = 'pristine-test-server';
const GREETING = 'hello';
const CREATE_TIMEOUT_MS = 240_000;
const DEB_PATH = '/packages/os-config-agent.deb';
const run = promisify(execFile);
const skip = missingForBoot() ?? false;

let heat: RealHeat | undefined;
let client: HeatClient;
let container: Container | undefined;
let server: http.Server | undefined;
/** Every request the package server saw: "METHOD url". */
const served: string[] = [];

t.before(async () => {
  if (skip) return;
  if (!statSync('/usr/bin/heat-all', { throwIfNoEntry: false }))
    throw new Error('real Heat is not installed: run "sudo bash test/integration/heat/install.sh"');
  ({ heat, client } = await startHeatSession(t));
});

t.teardown(async () => {
  await container?.stop();
  await new Promise((r) => (server ? server.close(r) : r(undefined)));
  if (!heat) return;
  const kept = await stopHeatSession(t, heat, `; the booted tree is ${ROOT}, console log and journal in ${BOOT}`);
  if (!kept) rmSync(ROOT, { recursive: true, force: true });
});

/** Serves the package as a web server would, on 127.0.0.1 (the container shares this machine's network). */
async function servePackage(deb: string): Promise<string> {
  server = http.createServer((req, res) => {
    served.push(`${req.method} ${req.url}`);
    if (req.method !== 'GET' || req.url !== DEB_PATH) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, {
      'content-type': 'application/vnd.debian.binary-package',
      'content-length': statSync(deb).size,
    });
    createReadStream(deb).pipe(res);
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}${DEB_PATH}`;
}

/** The seed and drop-ins (see the header). Host path -> container path. */
function prepareBoot(metadata: unknown, instanceId: string, userData: string): Record<string, string> {
  for (const d of ['seed', 'occ.conf.d', 'journald']) mkdirSync(path.join(BOOT, d), { recursive: true });
  writeFileSync(path.join(BOOT, 'seed/meta-data'), `instance-id: ${instanceId}\nlocal-hostname: ${HOSTNAME}\n`);
  writeFileSync(path.join(BOOT, 'seed/user-data'), userData, { mode: 0o600 });
  writeFileSync(path.join(BOOT, 'server-metadata.json'), JSON.stringify(metadata), { mode: 0o600 });
  writeFileSync(path.join(BOOT, 'occ.conf.d/pristine-test.conf'), '[ec2]\nmetadata_url =\n');
  // minbase generates no locale (stock images do); cloud-init's default en_US.UTF-8 would fail its locale module.
  writeFileSync(path.join(BOOT, 'cloud-test.cfg'), 'network: {config: disabled}\nlocale: C.UTF-8\n');
  writeFileSync(path.join(BOOT, 'journald/console.conf'), '[Journal]\nForwardToConsole=yes\nMaxLevelConsole=info\n');
  return {
    [path.join(BOOT, 'seed')]: '/var/lib/cloud/seed/nocloud',
    // The file, not the directory: the agent writes Heat's settings beside it (conf.d/00-heat.conf).
    [path.join(BOOT, 'occ.conf.d/pristine-test.conf')]: '/etc/os-collect-config.conf.d/pristine-test.conf',
    [path.join(BOOT, 'cloud-test.cfg')]: '/etc/cloud/cloud.cfg.d/99-pristine-test.cfg',
    [path.join(BOOT, 'journald')]: '/etc/systemd/journald.conf.d',
  };
}

/** The stack as `openstack stack create -e boot-config/os-config-agent_deb_env.yaml -e <url env> -t pristine.yaml`. */
async function createStack(url: string, sha256: string): Promise<string> {
  const urlEnv = path.join(BOOT, 'agent-url.yaml');
  writeFileSync(
    urlEnv,
    `parameter_defaults:\n  os_config_agent_deb_url: ${url}\n  os_config_agent_deb_sha256: ${sha256}\n`,
  );
  const { stdout } = await run(
    '/usr/bin/python3',
    [
      path.join(HERE, 'pristine-heat.py'),
      'stack-request',
      path.join(HERE, 'templates-pristine/pristine.yaml'),
      path.join(REPO, 'boot-config/os-config-agent_deb_env.yaml'),
      urlEnv,
    ],
    { timeout: 60_000 },
  );
  const request = JSON.parse(stdout) as Record<string, unknown>;
  const res = await client.call('POST', '/stacks', {
    ...request,
    stack_name: STACK,
    parameters: { greeting: GREETING },
    timeout_mins: 10,
    disable_rollback: true,
  });
  if (res.status !== 201) throw new Error(`stack create: ${res.status} ${JSON.stringify(res.body).slice(0, 500)}`);
  return (res.body as { stack: { id: string } }).stack.id;
}

/** The text of the software config boot_config names: what OS::Nova::Server would put in the user-data. */
async function bootConfigText(stackId: string): Promise<string> {
  const listed = await client.call('GET', `/stacks/${STACK}/${stackId}/resources?nested_depth=1`);
  const resources = (
    listed.body as { resources: Array<{ resource_name: string; physical_resource_id: string; resource_type: string }> }
  ).resources;
  const config = resources.find(
    (r) => r.resource_name === 'install_config_agent' && r.resource_type === 'OS::Heat::SoftwareConfig',
  );
  if (!config)
    throw new Error(
      `no install_config_agent in the nested boot_config stack: ${JSON.stringify(resources.map((r) => r.resource_name))}`,
    );
  const shown = await client.call('GET', `/software_configs/${config.physical_resource_id}`);
  return (shown.body as { software_config: { config: string } }).software_config.config;
}

const settle = (c: Container): Promise<Stack> => settleStack(client, STACK, c, CREATE_TIMEOUT_MS);

t.test(
  'a stock image with cloud-init installs the package at first boot and completes a real stack',
  { skip, timeout: 600_000 },
  async (t) => {
    const deb = debPackage() as string;
    const sha256 = createHash('sha256').update(readFileSync(deb)).digest('hex');
    rmSync(BOOT, { recursive: true, force: true });
    mkdirSync(BOOT, { recursive: true });
    const url = await servePackage(deb);
    const stackId = await createStack(url, sha256);
    await client.waitResource(STACK, 'server', 60_000);
    await client.waitResource(STACK, 'boot_config', 60_000);
    const metadata = await client.resourceMetadata(STACK, 'server');
    t.same(
      (metadata['os-collect-config'] as { collectors: string[] }).collectors,
      ['cfn', 'local'],
      'Heat gives the server the CFN transport',
    );

    const script = await bootConfigText(stackId);
    t.match(script, /^#!\/bin\/sh\n/, 'boot_config is the install script');
    t.ok(
      script.includes(`url='${url}'`) && script.includes(`sha256='${sha256}'`),
      'with the URL and sha256 of the environment filled in',
    );
    t.notMatch(script, /__OS_CONFIG_AGENT_DEB_/, 'no placeholder left');
    writeFileSync(path.join(BOOT, 'boot-config.sh'), script);
    writeFileSync(path.join(BOOT, 'server-metadata.json'), JSON.stringify(metadata), { mode: 0o600 });
    const { stdout: userData } = await run(
      '/usr/bin/python3',
      [
        path.join(HERE, 'pristine-heat.py'),
        'user-data',
        path.join(BOOT, 'server-metadata.json'),
        path.join(BOOT, 'boot-config.sh'),
      ],
      { timeout: 60_000 },
    );
    t.match(userData, /Content-Type: text\/part-handler/, "the user-data carries Heat's part-handler");
    t.match(userData, /Content-Type: text\/x-cfninitdata[^]*filename="cfn-init-data"/, 'the cfn-init-data part');
    t.match(userData, /install-os-config-agent/, "and boot-config's script");
    const binds = prepareBoot(metadata, await client.resourceId(STACK, 'server'), userData);

    t.comment(`fresh stock tree in ${(await freshTree(ROOT)).toFixed(1)} s`);
    const c = bootContainer({
      tree: ROOT,
      consoleLog: path.join(BOOT, 'console.log'),
      bindRo: binds,
      hostname: HOSTNAME,
    });
    container = c;
    const done = await settle(c);
    const seconds = (Date.now() - c.startedAt) / 1000;
    t.equal(done.stack_status, 'CREATE_COMPLETE', done.stack_status_reason);
    const out = outputsOf(done);
    t.equal(out.echoed, `${GREETING} from a pristine image`, "the deployment's output");
    t.equal(out.hostname, HOSTNAME, 'the script ran inside the booted system');
    t.equal(
      out.agent,
      `/usr/lib/os-config-agent/bin/os-collect-config os-collect-config (os-config-agent) ${VERSION}`,
      "with the package's agent on PATH",
    );
    t.equal(out.status, 0, 'deploy_status_code');
    t.equal(out.stdout, 'hello deployment ran\n', 'deploy_stdout');
    const signals = (await client.events(STACK, 'hello')).filter((e) => e.resource_status.startsWith('SIGNAL')).length;
    t.equal(signals, 1, 'the deployment signalled once');
    t.comment(
      `container start -> CREATE_COMPLETE: ${seconds.toFixed(1)} s (download, apt install and the deployment included)`,
    );
    writeFileSync(path.join(BOOT, 'create-seconds'), `${seconds.toFixed(1)}\n`);

    // The download: one GET of the package from the server the environment named.
    t.same(served, [`GET ${DEB_PATH}`], 'the package was downloaded once, from the URL given');
    t.equal(await dpkgStatus(c, 'os-config-agent'), 'ii', 'the package is installed');
    const output = await say(c, ['cat', '/var/log/cloud-init-output.log']);
    writeFileSync(path.join(BOOT, 'cloud-init-output.log'), output);
    t.match(output, /install-os-config-agent: sha256 checked/, 'the script checked the sha256');
    t.match(
      output,
      new RegExp(`install-os-config-agent: installed os-config-agent ${VERSION.replaceAll('.', '\\.')};`),
      'and installed the package',
    );

    // cloud-init and the ordering: the install inside cloud-final did not wait for the agent (which is ordered after
    // cloud-final); the agent started once cloud-final had finished, and found the part-handler's data.
    t.equal(await say(c, ['cloud-init', 'status'], 60_000), 'status: done', 'cloud-init finished');
    t.equal(
      await say(c, ['systemctl', 'show', '-p', 'Result', '--value', 'cloud-final.service']),
      'success',
      'cloud-final succeeded',
    );
    const agentStart = await unitNumber(c, 'os-config-agent.service', 'ExecMainStartTimestampMonotonic');
    const finalDone = await unitNumber(c, 'cloud-final.service', 'ActiveEnterTimestampMonotonic');
    t.ok(finalDone > 0 && agentStart >= finalDone, `the agent started after cloud-final (${finalDone}): ${agentStart}`);
    t.equal(
      await say(c, ['systemctl', 'show', '-p', 'NRestarts', '--value', 'os-config-agent.service']),
      '0',
      'the agent was never restarted',
    );
    t.equal(
      await say(c, ['systemctl', 'is-enabled', 'os-config-agent.service']),
      'enabled',
      'the unit is enabled for the next boots',
    );
    t.same(
      JSON.parse(await say(c, ['cat', '/var/lib/heat-cfntools/cfn-init-data'])),
      metadata,
      'the part-handler wrote the server metadata before the agent existed',
    );
    const heat = await say(c, ['cat', '/etc/os-collect-config.conf.d/00-heat.conf']);
    t.match(
      heat,
      /collectors = cfn/,
      'the agent configured itself from cfn-init-data (heat_local) for the CFN transport, in conf.d/00-heat.conf',
    );
    t.equal(
      await say(c, ['stat', '-c', '%a', '/etc/os-collect-config.conf.d/00-heat.conf']),
      '600',
      'the configuration written from Heat is 0600',
    );
    t.equal(
      `${await say(c, ['cat', '/etc/os-collect-config.conf'])}\n`,
      readFileSync(path.join(REPO, 'scripts/deb/os-collect-config.conf'), 'utf8'),
      "the package's conffile is untouched: the operator's, and an upgrade asks nothing about it",
    );
    const warnings = (await say(c, ['journalctl', '--no-pager', '-u', 'os-config-agent', '-p', 'warning', '-o', 'cat']))
      .split('\n')
      .filter((l) => l.startsWith('{'));
    t.ok(
      warnings.every((l) => /^\{"level":"(warn|error|fatal)"/.test(l)),
      'journalctl -p warning: warnings and worse only (each line has its syslog priority)',
      { warnings },
    );
    t.equal(await say(c, ['cat', '/var/lib/pristine-test/runs']), 'hello CREATE', 'the script ran once');

    // The operator's view: the agent's lines in the journal, no secret in it, status.
    const journalText = await say(c, ['journalctl', '--no-pager', '-u', 'os-config-agent', '-o', 'short-iso']);
    writeFileSync(path.join(BOOT, 'journal.txt'), `${journalText}\n`);
    const journal = agentLines(await say(c, ['journalctl', '--no-pager', '-u', 'os-config-agent', '-o', 'cat']));
    t.ok(
      journal.some((l) => l.msg === 'agent starting'),
      "the journal has the agent's start",
    );
    const fullMetadata = await client.resourceMetadata(STACK, 'server');
    const deployment = ((fullMetadata.deployments ?? []) as Array<{ id: string; name: string }>).find((d) =>
      d.name.startsWith(`${STACK}-hello_config-`),
    );
    const changes = journal
      .filter((l) => l.msg === 'deployment state changed' && l.deploymentId === deployment?.id)
      .map((l) => `${l.from ?? 'new'}>${l.to}`);
    t.ok(
      changes.length >= 3 && changes.at(-1)?.endsWith('>signalled'),
      `one line per state change, ending signalled (${changes.join(', ')})`,
    );
    t.equal(new Set(changes).size, changes.length, 'no state change logged twice');
    const occ = fullMetadata['os-collect-config'] as { cfn: { secret_access_key: string } };
    const whole = await say(c, ['journalctl', '--no-pager', '-o', 'cat']);
    t.notOk(whole.includes(occ.cfn.secret_access_key), 'the CFN secret key is nowhere in the journal');
    t.notOk(output.includes(occ.cfn.secret_access_key), "nor in cloud-init's output");
    const report = JSON.parse(await say(c, ['os-config-agent', 'status', '--json'])) as {
      deployments: Array<{ id: string; state: string; signal: { state: string } }>;
    };
    t.same(
      report.deployments.map((d) => [d.id, d.state, d.signal.state]),
      [[deployment?.id, 'signalled', 'sent']],
      'status: the deployment is signalled',
    );

    const stopped = Date.now();
    await c.stop();
    container = undefined;
    t.equal(await c.service.exited, 0, `clean poweroff in ${((Date.now() - stopped) / 1000).toFixed(1)} s`);
  },
);
