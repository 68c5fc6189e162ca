import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t, { type Test } from 'tap';
import { commandEntries } from '../../helpers/bundle.js';
import { startTinyproxy, tinyproxyMissing } from '../../helpers/tinyproxy.js';
import { chainedTemplate, chainValue } from './chain-template.js';
import { startCountingProxy } from './counting-proxy.js';
import { HeatClient, outputsOf, type Stack } from './heat-client.js';
import type { RealHeat } from './harness.js';
import { startHeatSession, stopHeatSession } from './heat-session.js';
import {
  AGENT_STOP_GRACE_MS,
  BUNDLE,
  prepareInstance,
  startAgent,
  type AgentProcess,
  type Instance,
  type PollSettings,
} from './instance.js';

// The agent against real OpenStack Heat and Keystone (Debian's packages, all on 127.0.0.1): each scenario creates a
// stack around an OS::Heat::DeployedServer, gives a fresh instance root only the heat_local data a cold boot has,
// starts `os-config-agent run` on it and checks what Heat itself reports. Not part of the default `tap` run (the
// file name does not match test/**/*.test.ts); run it with
//   sudo bash test/integration/heat/install.sh && node scripts/build.mjs && \
//   npx tap --timeout=480 test/integration/heat/real-heat.itest.ts
// Every scenario is bounded (90 s); a failed run (or any run with OCA_REAL_HEAT_KEEP=1) keeps Heat's state directory
// and logs and names it. OCA_AGENT_BUNDLE=<file> runs another build of the agent than dist/os-config-agent.mjs.

const TEMPLATES = path.join(path.dirname(fileURLToPath(import.meta.url)), 'templates');
// Shared by most scenarios; tap's --grep marks the options object of each test it filters out as skipped, so a
// scenario meant to be run alone (--grep) takes a fresh object.
const SCENARIO = { timeout: 90_000 };
const run = promisify(execFile);

let heat: RealHeat | undefined;
let client: HeatClient;

t.before(async () => {
  for (const tool of [
    'heat-all',
    'keystone-wsgi-public',
    'keystone-manage',
    'heat-manage',
    'swift-proxy-server',
    'swift-ring-builder',
  ]) {
    if (!existsSync(`/usr/bin/${tool}`))
      throw new Error(`/usr/bin/${tool} is missing: run "sudo bash test/integration/heat/install.sh" first`);
  }
  ({ heat, client } = await startHeatSession(t, { swift: true }));
});

t.teardown(async () => {
  if (heat) await stopHeatSession(t, heat);
});

/**
 * A scenario's own directory (its instance root, markers, config files), inside Heat's state directory rather than a
 * tap fixture: it is kept with Heat's logs and the agent's when a run fails, and removed with them otherwise.
 */
function scenarioDir(stack: string): string {
  const dir = path.join(heat!.dir, 'scenarios', stack);
  mkdirSync(dir, { recursive: true });
  return dir;
}

function template(name: string): string {
  return readFileSync(path.join(TEMPLATES, name), 'utf8');
}

interface Booted {
  readonly instance: Instance;
  readonly agent: AgentProcess;
  /** Date.now() just before `stack create`. */
  readonly createdAt: number;
  readonly logFile: string;
}

/** A stack's template given as text, and the agent's poll settings when they are not the scenarios' 1 s polls. */
interface StackSource {
  readonly template: string;
  readonly polls?: PollSettings;
}

/**
 * Creates the stack (`source`: a file in templates/, or the template's text), waits for its server, builds the
 * instance from the server's os-collect-config and starts the agent.
 */
async function boot(
  tt: Test,
  stack: string,
  source: string | StackSource,
  parameters: Record<string, unknown>,
  dir = scenarioDir(stack),
  prepare?: (instance: Instance) => void,
): Promise<Booted> {
  const { template: text, polls } = typeof source === 'string' ? { template: template(source) } : source;
  const createdAt = Date.now();
  await client.createStack(stack, text, parameters);
  await client.waitResource(stack, 'server', 30_000);
  const metadata = await client.resourceMetadata(stack, 'server');
  tt.ok(metadata['os-collect-config'], 'Heat gives the server an os-collect-config section');
  const instance = prepareInstance(dir, metadata['os-collect-config'], polls);
  prepare?.(instance);
  const logFile = path.join(heat!.dir, `agent-${stack}.log`);
  const agent = startAgent(instance, logFile);
  tt.teardown(async () => {
    const stopping = Date.now();
    const result = await agent.stop();
    const ms = Date.now() - stopping;
    // Past the grace the agent did not leave on SIGTERM (an agent that crashed on purpose is gone already).
    if (ms >= AGENT_STOP_GRACE_MS) tt.comment(`agent stop: ${result} after ${ms} ms; agent log: ${logFile}`);
    else if (!tt.passing()) tt.comment(`agent log: ${logFile}`);
  });
  return { instance, agent, createdAt, logFile };
}

/** Waits for the stack's `action` to end, failing at once when an agent can no longer make progress. */
async function settle(
  stack: string,
  action: 'CREATE' | 'UPDATE' | 'DELETE',
  timeoutMs: number,
  agents: readonly AgentProcess[],
): Promise<Stack | undefined> {
  let done = false;
  const waiting = client.waitFor(stack, action, timeoutMs).finally(() => (done = true));
  const watch = (async () => {
    while (!done) {
      const problem = agents.map((a) => a.problem()).find(Boolean);
      if (problem) throw new Error(`stack ${stack} waiting for ${action}: ${problem}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    return undefined;
  })();
  const [result] = await Promise.all([waiting, watch]);
  return result;
}

/** A loopback port nothing listens on (bound, then closed): a stopped service. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

async function signalEvents(stack: string, resource: string): Promise<number> {
  const events = await client.events(stack, resource);
  return events.filter((e) => e.resource_status.startsWith('SIGNAL')).length;
}

async function deploymentRecord(stack: string, resource: string) {
  return client.softwareDeployment(await client.resourceId(stack, resource));
}

t.test(
  'harness self-check: Debian os-collect-config reads the metadata through heat-api-cfn; a manual CFN signal completes the stack',
  SCENARIO,
  async (t) => {
    if (!existsSync('/usr/bin/os-collect-config'))
      throw new Error('/usr/bin/os-collect-config is missing: run test/integration/heat/install.sh');
    const stack = 'selfcheck';
    const doc = { nested: { list: [1, 'two', null] } };
    await client.createStack(stack, template('typed-inputs.yaml'), {
      text: 'plain',
      count: 7,
      flag: false,
      items: 'x,y',
      doc,
    });
    await client.waitResource(stack, 'server', 30_000);
    const occ = (await client.resourceMetadata(stack, 'server'))['os-collect-config'] as {
      cfn: Record<string, string>;
    };
    t.match(occ.cfn.metadata_url, /^http:\/\/127\.0\.0\.1:\d+\/v1\/$/, 'the CFN metadata URL is loopback');
    const dir = scenarioDir(stack);
    const conf = path.join(dir, 'occ.conf');
    writeFileSync(
      conf,
      `[DEFAULT]\ncachedir = ${dir}/cache\nbackup_cachedir = ${dir}/backup\n[cfn]\nmetadata_url = ${occ.cfn.metadata_url}\naccess_key_id = ${occ.cfn.access_key_id}\n` +
        `secret_access_key = ${occ.cfn.secret_access_key}\nstack_name = ${occ.cfn.stack_name}\npath = ${occ.cfn.path}\n`,
      { mode: 0o600 },
    );
    // The deployment is added to the metadata moments after the server completes.
    let deployment: { inputs: Array<{ name: string; value: unknown }> } | undefined;
    for (let i = 0; i < 40 && !deployment; i++) {
      const { stdout } = await run('/usr/bin/os-collect-config', ['--config-file', conf, '--print', 'cfn'], {
        env: { PATH: '/usr/bin:/bin' },
        timeout: 30_000,
      });
      deployment = (JSON.parse(stdout) as { cfn?: { deployments?: Array<typeof deployment> } }).cfn?.deployments?.[0];
      if (!deployment) await new Promise((r) => setTimeout(r, 500));
    }
    if (!deployment) throw new Error('os-collect-config never saw the deployment');
    const input = (name: string) => deployment!.inputs.find((i) => i.name === name)?.value;
    t.same(input('doc'), doc, 'a Json input arrives in the metadata as JSON');
    t.same(input('items'), ['x', 'y'], 'a CommaDelimitedList input arrives as a list');
    t.equal(input('count'), 7, 'a Number input arrives as a number');
    t.equal(input('deploy_signal_transport'), 'CFN_SIGNAL');
    const signalUrl = String(input('deploy_signal_id'));
    t.match(signalUrl, /^http:\/\/127\.0\.0\.1:\d+\/v1\/signal\//, 'the pre-signed signal URL is loopback');
    const res = await fetch(signalUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        deploy_stdout: 'manual out',
        deploy_stderr: 'manual err',
        deploy_status_code: 0,
        text_out: 'by hand',
      }),
      signal: AbortSignal.timeout(30_000),
    });
    t.equal(res.status, 200, 'heat-api-cfn accepts the signed signal');
    const done = (await client.waitFor(stack, 'CREATE', 60_000)) as Stack;
    t.equal(done.stack_status, 'CREATE_COMPLETE', done.stack_status_reason);
    const out = outputsOf(done);
    t.equal(out.text_out, 'by hand');
    t.equal(out.deploy_stdout, 'manual out');
    t.equal(out.deploy_status_code, 0);
    t.ok(heat!.ec2Bridge.forwarded() > 0, 'signed requests went through the ec2tokens bridge');
    t.equal(await signalEvents(stack, 'deployment'), 1, 'one signal event');
  },
);

t.test(
  'harness self-check: Heat publishes metadata to a Swift TempURL and takes a signal written to one',
  SCENARIO,
  async (t) => {
    const stack = 'selfcheck-swift';
    await client.createStack(stack, template('temp-url.yaml'), { who: 'by hand' });
    await client.waitResource(stack, 'server', 30_000);
    const occ = (await client.resourceMetadata(stack, 'server'))['os-collect-config'] as {
      collectors: string[];
      request: { metadata_url: string };
    };
    t.same(occ.collectors, ['request', 'local']);
    t.ok(
      occ.request.metadata_url.startsWith(`${heat!.swiftUrl}/v1/AUTH_`),
      'the metadata TempURL is on the loopback Swift',
    );
    let deployment: { inputs: Array<{ name: string; value: unknown }> } | undefined;
    for (let i = 0; i < 40 && !deployment; i++) {
      const res = await fetch(occ.request.metadata_url, { signal: AbortSignal.timeout(30_000) });
      t.equal(res.status, 200, 'the TempURL answers without a token');
      deployment = ((await res.json()) as { deployments?: Array<typeof deployment> }).deployments?.[0];
      if (!deployment) await new Promise((r) => setTimeout(r, 500));
    }
    if (!deployment) throw new Error('the TempURL metadata never held the deployment');
    const input = (name: string) => deployment!.inputs.find((i) => i.name === name)?.value;
    t.equal(input('deploy_signal_transport'), 'TEMP_URL_SIGNAL');
    t.equal(input('deploy_signal_verb'), 'PUT');
    const res = await fetch(String(input('deploy_signal_id')), {
      method: 'PUT',
      body: JSON.stringify({
        deploy_stdout: 'manual',
        deploy_stderr: '',
        deploy_status_code: 0,
        greeting: 'written by hand',
      }),
      signal: AbortSignal.timeout(30_000),
    });
    t.equal(res.status, 201, 'Swift stores the signal object');
    const done = (await client.waitFor(stack, 'CREATE', 60_000)) as Stack;
    t.equal(done.stack_status, 'CREATE_COMPLETE', done.stack_status_reason);
    t.equal(outputsOf(done).greeting, 'written by hand');
  },
);

t.test('POLL_SERVER_CFN + CFN_SIGNAL: typed inputs, outputs and deploy_* attributes', SCENARIO, async (t) => {
  const stack = 'cfn-typed';
  const doc = { k: [1, 2], s: 'x', nested: { ok: true } };
  const booted = await boot(t, stack, 'typed-inputs.yaml', {
    text: 'two words',
    count: 42,
    flag: true,
    items: 'a,b,c',
    doc,
  });
  const done = (await settle(stack, 'CREATE', 80_000, [booted.agent])) as Stack;
  const seconds = (Date.now() - booted.createdAt) / 1000;
  const peak = booted.agent.peakRssKib();
  t.equal(done.stack_status, 'CREATE_COMPLETE', done.stack_status_reason);
  const out = outputsOf(done);
  t.equal(out.text_out, 'two words', 'String input');
  t.equal(out.count_out, '42', 'Number input');
  t.equal(out.flag_out, 'true', 'Boolean input');
  t.same(JSON.parse(String(out.items_out)), ['a', 'b', 'c'], 'CommaDelimitedList input (JSON-encoded list)');
  t.same(JSON.parse(String(out.doc_out)), doc, 'Json input');
  t.equal(out.action_out, 'CREATE');
  t.match(String(out.deploy_stdout), /^stdout of the typed deployment\n?$/, 'deploy_stdout');
  t.match(String(out.deploy_stderr), /stderr of the typed deployment/, 'deploy_stderr');
  t.equal(out.deploy_status_code, 0, 'deploy_status_code');
  t.match(booted.instance.readConfig(), /collectors = cfn/, 'the agent switched itself from heat_local to cfn');
  t.equal(await signalEvents(stack, 'deployment'), 1, 'signalled once');
  t.comment(
    `stack create -> CREATE_COMPLETE: ${seconds.toFixed(1)} s (polling_interval 1 s); agent peak RSS ${peak === undefined ? 'unknown' : `${(peak / 1024).toFixed(1)} MiB`}`,
  );
});

t.test(
  "a deployment consuming another deployment's output arrives after the first is signalled",
  SCENARIO,
  async (t) => {
    const stack = 'cfn-chained';
    const booted = await boot(t, stack, 'chained.yaml', { seed: 's33d' });
    const done = (await settle(stack, 'CREATE', 80_000, [booted.agent])) as Stack;
    t.equal(done.stack_status, 'CREATE_COMPLETE', done.stack_status_reason);
    const out = outputsOf(done);
    t.equal(out.token, 'token-from-first:s33d');
    t.equal(out.seen, 'second saw token-from-first:s33d', "the second deployment received the first one's output");
    t.equal(await signalEvents(stack, 'first'), 1, 'first signalled once');
    t.equal(await signalEvents(stack, 'second'), 1, 'second signalled once');
  },
);

t.test(
  'default polling (polling_interval 30): a 3-link chain completes within one interval of its first signal',
  { timeout: 150_000 },
  async (t) => {
    // The first link waits 15 s for a resource before it, so it appears once the idle agent's sleeps have doubled to
    // 8 or 16 s. Heat publishes each next link 1-4 s after the previous one's signal: a poll soon after each signal
    // finds it, where upstream's sequence (poll_after_signal = false) would wait for the 16 s and 30 s sleeps, about
    // 45 s after the first signal.
    const stack = 'chain-default-polls';
    const polls = { min_polling_interval: 1, polling_interval: 30, poll_jitter: 0 };
    const booted = await boot(t, stack, { template: chainedTemplate(3, { delaySeconds: 15 }), polls }, { seed: 's' });
    const done = (await settle(stack, 'CREATE', 120_000, [booted.agent])) as Stack;
    const completedAt = Date.now();
    t.equal(done.stack_status, 'CREATE_COMPLETE', done.stack_status_reason);
    t.equal(outputsOf(done).last, chainValue('s', 3), "each link received the previous one's output");
    const firstSignal = booted.agent.lines.find((l) => l.msg === 'deployment state changed' && l.to === 'signalled');
    const firstSignalAt = Date.parse(String(firstSignal?.time));
    t.ok(Number.isFinite(firstSignalAt), 'the agent logged the first signal');
    t.ok(
      completedAt - firstSignalAt < 30_000,
      `CREATE_COMPLETE ${((completedAt - firstSignalAt) / 1000).toFixed(1)} s after the first signal: within one polling_interval`,
    );
    for (const link of ['link1', 'link2', 'link3'])
      t.equal(await signalEvents(stack, link), 1, `${link} signalled once`);
  },
);

t.test("POLL_SERVER_HEAT + HEAT_SIGNAL with the stack user's Keystone password", SCENARIO, async (t) => {
  const stack = 'heat-native';
  const booted = await boot(t, stack, 'heat-signal.yaml', { who: 'native api' });
  const done = (await settle(stack, 'CREATE', 80_000, [booted.agent])) as Stack;
  t.equal(done.stack_status, 'CREATE_COMPLETE', done.stack_status_reason);
  const out = outputsOf(done);
  t.equal(out.greeting, 'hello native api');
  t.match(String(out.deploy_stdout), /signalled over the native API/);
  t.equal(out.deploy_status_code, 0);
  t.match(booted.instance.readConfig(), /collectors = heat/, 'the agent switched itself to the heat collector');
  t.equal(await signalEvents(stack, 'deployment'), 1, 'signalled once');
});

t.test(
  'doctor on a booted instance: exit 0, also through tinyproxy; a broken password or a stopped Keystone exits 1 naming credentials.heat',
  { timeout: SCENARIO.timeout },
  async (t) => {
    const stack = 'doctor';
    const booted = await boot(t, stack, 'heat-signal.yaml', { who: 'doctor' });
    const done = (await settle(stack, 'CREATE', 60_000, [booted.agent])) as Stack;
    t.equal(done.stack_status, 'CREATE_COMPLETE', done.stack_status_reason);
    // The instance as the agent left it: self-configured for the heat collector, the script deployment cached.
    const doctor = async (...extra: string[]) => {
      try {
        const { stdout } = await run(
          process.execPath,
          [BUNDLE, 'doctor', '--root', booted.instance.root, '--config-file', '/etc/os-collect-config.conf', ...extra],
          { timeout: 30_000 },
        );
        return { code: 0, stdout };
      } catch (err) {
        const e = err as { code?: number; stdout?: string; stderr?: string };
        return { code: e.code ?? -1, stdout: `${e.stdout ?? ''}${e.stderr ?? ''}` };
      }
    };
    const good = await doctor();
    t.equal(good.code, 0, good.stdout);
    t.match(good.stdout, /^ok {4}credentials\.heat /m, 'Keystone issued a token');
    t.match(good.stdout, /^ok {4}source\.heat /m, 'Heat returned the metadata');
    t.match(good.stdout, /^ok {4}hook\.script /m, 'the script hook is installed and bash found');
    t.match(good.stdout, /^ok {4}clock /m, "the clock agrees with Heat's Date");

    const wrongPassword = await doctor('--heat-password', 'not-the-password');
    t.equal(wrongPassword.code, 1, wrongPassword.stdout);
    t.match(
      wrongPassword.stdout,
      /^FAIL {2}credentials\.heat .*refused the credentials.* -- check \[heat\] user_id, password and project_id/m,
    );
    t.notMatch(wrongPassword.stdout, /not-the-password/, 'the password is not shown');

    const stopped = `http://127.0.0.1:${await closedPort()}/v3`;
    const noKeystone = await doctor('--heat-auth-url', stopped);
    t.equal(noKeystone.code, 1, noKeystone.stdout);
    t.match(noKeystone.stdout, /^FAIL {2}credentials\.heat .* -- check that the endpoint is up/m);

    // Through the proxy in force ([agent] http_proxy): Debian's tinyproxy carries the login and the metadata request.
    if (!tinyproxyMissing()) {
      const proxy = await startTinyproxy(scenarioDir(`${stack}-proxy`));
      t.teardown(() => proxy.stop());
      const proxied = await doctor('--agent-http-proxy', proxy.url);
      t.equal(proxied.code, 0, proxied.stdout);
      t.ok(
        proxy.requests().some((r) => /^POST http:\/\/127\.0\.0\.1:\d+\/.*auth\/tokens /.test(r)),
        `Keystone reached through tinyproxy: ${proxy.requests().join('; ')}`,
      );
      t.ok(
        proxy.requests().some((r) => /^GET .*\/resources\/server\/metadata /.test(r)),
        'Heat reached through tinyproxy',
      );
    }
  },
);

t.test(
  'heat collector with an unversioned auth_url and [keystone] cache_dir: version discovered, and a restarted agent reuses the cached token (no second login)',
  { timeout: SCENARIO.timeout },
  async (t) => {
    const stack = 'keystone-cache';
    const dir = scenarioDir(stack);
    await client.createStack(stack, template('heat-signal.yaml'), { who: 'cached token' });
    await client.waitResource(stack, 'server', 30_000);
    const occ = (await client.resourceMetadata(stack, 'server'))['os-collect-config'] as {
      heat: Record<string, string | null>;
    };
    t.match(String(occ.heat.auth_url), /\/v3\/?$/, 'Heat hands out a versioned auth_url');
    // Every request the collector sends Keystone passes the proxy; the agent is given its unversioned root.
    const proxy = await startCountingProxy(Number(new URL(heat!.keystoneUrl).port));
    t.teardown(() => proxy.close());
    const instance = prepareInstance(dir, occ);
    const heatSection = Object.entries({ ...occ.heat, auth_url: `${proxy.url}/` })
      .filter(([, v]) => typeof v === 'string' && v !== '' && v !== 'null')
      .map(([k, v]) => `${k} = ${v}`);
    // Only the heat collector, and no self-configuration (it would put Heat's versioned auth_url back).
    writeFileSync(
      path.join(instance.root, 'etc/os-collect-config.conf'),
      [
        '[DEFAULT]',
        'collectors = heat',
        'command = /bin/true',
        'min_polling_interval = 1',
        'polling_interval = 1',
        '[agent]',
        'poll_jitter = 0',
        'config_target =',
        '[keystone]',
        'cache_dir = /var/lib/os-collect-config/keystone',
        '[heat]',
        ...heatSection,
        '',
      ].join('\n'),
      { mode: 0o600 },
    );
    const logFile = path.join(heat!.dir, `agent-${stack}.log`);
    const first = startAgent(instance, logFile);
    t.teardown(() => first.stop());
    const done = (await settle(stack, 'CREATE', 60_000, [first])) as Stack;
    t.equal(done.stack_status, 'CREATE_COMPLETE', done.stack_status_reason);
    t.equal(outputsOf(done).greeting, 'hello cached token');
    // Keystone's 300 carries Location: <v3 URL>, which the HTTP client follows; the v3 document names the same endpoint.
    const discoveredAndLoggedIn = ['GET /', 'GET /v3/', 'POST /v3/auth/tokens'];
    t.same(proxy.requests, discoveredAndLoggedIn, 'the first agent discovered v3 from the root, then logged in once');
    const cacheDir = path.join(instance.root, 'var/lib/os-collect-config/keystone');
    const files = readdirSync(cacheDir);
    t.equal(files.length, 1, 'one token file');
    t.equal(statSync(cacheDir).mode & 0o777, 0o700, 'cache directory 0700');
    t.equal(statSync(path.join(cacheDir, files[0]!)).mode & 0o777, 0o600, 'token file 0600');
    await first.stop();

    const second = startAgent(instance, logFile);
    t.teardown(() => second.stop());
    // Polls that reached Heat with the cached token end in "no changes detected"; a refused one would be logged.
    const deadline = Date.now() + 30_000;
    while (second.lines.filter((l) => l.msg === 'no changes detected').length < 3) {
      const problem = second.problem();
      if (problem) throw new Error(`waiting for the restarted agent to poll Heat: ${problem}`);
      if (Date.now() > deadline) throw new Error(`the restarted agent did not complete three polls; see ${logFile}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    t.ok(
      second.lines.some((l) => l.msg === 'reusing the cached Keystone token'),
      'the restarted agent read the token from cache_dir',
    );
    t.notOk(
      second.lines.some(
        (l) => l.msg === 'source unavailable' || l.msg === 'Heat refused the cached token; authenticating again',
      ),
      'Heat accepted the cached token',
    );
    t.same(
      proxy.requests,
      discoveredAndLoggedIn,
      'Keystone saw nothing from the restarted agent: no discovery, no login',
    );
    const token = JSON.parse(readFileSync(path.join(cacheDir, files[0]!), 'utf8')) as { token: string };
    t.notOk(readFileSync(logFile, 'utf8').includes(token.token), 'the token is in no log line');
  },
);

t.test('POLL_TEMP_URL + TEMP_URL_SIGNAL through a real Swift proxy', SCENARIO, async (t) => {
  const stack = 'swift-temp-url';
  const booted = await boot(t, stack, 'temp-url.yaml', { who: 'swift' });
  const done = (await settle(stack, 'CREATE', 80_000, [booted.agent])) as Stack;
  t.equal(done.stack_status, 'CREATE_COMPLETE', done.stack_status_reason);
  const out = outputsOf(done);
  t.equal(out.greeting, 'hello swift');
  t.match(String(out.deploy_stdout), /signalled through a TempURL/);
  t.equal(out.deploy_status_code, 0);
  t.match(booted.instance.readConfig(), /collectors = request/, 'the agent switched itself to the request collector');
  t.ok(
    booted.instance.readConfig().includes(`metadata_url = ${heat!.swiftUrl}/v1/AUTH_`),
    'reading a TempURL of the loopback Swift',
  );
});

t.test('a failing script fails the stack and Heat keeps its stderr', SCENARIO, async (t) => {
  const stack = 'cfn-failing';
  const booted = await boot(t, stack, 'failing.yaml', {});
  const done = (await settle(stack, 'CREATE', 80_000, [booted.agent])) as Stack;
  t.equal(done.stack_status, 'CREATE_FAILED');
  t.match(done.stack_status_reason, /non-zero status code: 3/, 'Heat reports the exit code');
  const record = await deploymentRecord(stack, 'deployment');
  t.equal(record.status, 'FAILED');
  t.match(
    String(record.output_values?.deploy_stderr),
    /disk quota exceeded \(failing on purpose\)/,
    "the script's stderr is in Heat",
  );
  t.match(String(record.output_values?.deploy_stdout), /about to fail/);
  t.equal(record.output_values?.deploy_status_code, 3);
});

interface StatusReport {
  version: number;
  agent: { running: boolean; lastCycle?: { result: string } };
  sources: Array<{ name: string; lastSuccessAt?: string }>;
  deployments: Array<{ id: string; name: string; state: string; failed?: boolean; signal: { state: string } }>;
  result: { exitCode: number };
}

interface DeploymentReport {
  deployment: { id: string; state: string; failed?: boolean; signal: { state: string } };
  stderrTail?: string;
}

/** `os-config-agent status [args] --json` as the bundle, on the instance root: its exit code and what it printed. */
async function status<R>(
  root: string,
  args: readonly string[],
  timeoutMs: number,
): Promise<{ code: number; report: R }> {
  const bundle = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../../dist/os-config-agent.mjs');
  const argv = [bundle, 'status', '--root', root, '--config-file', '/etc/os-collect-config.conf', ...args, '--json'];
  const done = await run(process.execPath, argv, { timeout: timeoutMs }).then(
    (r) => ({ code: 0, stdout: r.stdout }),
    (e: { code?: number; stdout?: string }) => ({
      code: typeof e.code === 'number' ? e.code : -1,
      stdout: e.stdout ?? '',
    }),
  );
  return { code: done.code, report: JSON.parse(done.stdout) as R };
}

// Heat adds a deployment to the server's metadata only once the server resource is complete, so the agent's first
// cycle may well see none: a script waits for the deployment it needs by name (the SoftwareDeployment's `name`).
t.test(
  'status --wait <name> on the instance: exit 0 once the deployment is signalled, exit 1 when its script failed',
  { timeout: 120_000 },
  async (t) => {
    const [good, bad] = await Promise.all([
      boot(t, 'status-wait-ok', 'typed-inputs.yaml', {
        text: 'status',
        count: 1,
        flag: false,
        items: 'a',
        doc: { a: 1 },
      }),
      boot(t, 'status-wait-failing', 'failing.yaml', {}),
    ]);
    const [ok, failed] = await Promise.all([
      status<DeploymentReport>(good.instance.root, ['typed-deployment', '--wait', '--timeout', '90'], 120_000),
      status<DeploymentReport>(bad.instance.root, ['failing-deployment', '--wait', '--timeout', '90'], 120_000),
    ]);
    t.equal(ok.code, 0, 'done and signalled: exit 0');
    t.match(ok.report.deployment, { state: 'signalled', signal: { state: 'sent' }, failed: false });
    // A failure is known as soon as the result is: --wait ends with it, whether or not Heat has the signal yet.
    t.equal(failed.code, 1, 'the script failed: exit 1');
    t.match(failed.report.deployment, { failed: true });
    t.ok(['done', 'signalled'].includes(failed.report.deployment.state), 'it has its result');
    t.match(
      failed.report.stderrTail,
      /disk quota exceeded \(failing on purpose\)/,
      "the report has the script's stderr tail",
    );

    const whole = await status<StatusReport>(good.instance.root, [], 30_000);
    t.equal(whole.code, 0, 'the whole report agrees: exit 0');
    t.equal(whole.report.version, 1);
    t.equal(whole.report.agent.running, true, 'the agent is running');
    t.ok(
      whole.report.sources.some((s) => s.name === 'cfn' && s.lastSuccessAt),
      'the cfn source is reported with its last success',
    );
    t.same(
      whole.report.deployments.map((d) => [d.name, d.state, d.signal.state, d.failed]),
      [['typed-deployment', 'signalled', 'sent', false]],
    );
    const done = await settle('status-wait-ok', 'CREATE', 30_000, [good.agent]);
    t.equal(done?.stack_status, 'CREATE_COMPLETE', 'Heat agrees');
    const failedStack = await settle('status-wait-failing', 'CREATE', 30_000, [bad.agent]);
    t.equal(failedStack?.stack_status, 'CREATE_FAILED', 'Heat agrees that it failed');
  },
);

t.test(
  'stack update re-runs the hook with UPDATE; stack delete runs it with DELETE before Heat finishes',
  SCENARIO,
  async (t) => {
    const stack = 'cfn-lifecycle';
    const dir = scenarioDir(stack);
    const record = path.join(dir, 'markers', 'record.log');
    const booted = await boot(t, stack, 'lifecycle.yaml', { value: 'one', record }, dir);
    const created = (await settle(stack, 'CREATE', 40_000, [booted.agent])) as Stack;
    t.equal(created.stack_status, 'CREATE_COMPLETE', created.stack_status_reason);
    t.equal(outputsOf(created).result, 'CREATE:one');

    await client.updateParameters(stack, { value: 'two' });
    const updated = (await settle(stack, 'UPDATE', 40_000, [booted.agent])) as Stack;
    t.equal(updated.stack_status, 'UPDATE_COMPLETE', updated.stack_status_reason);
    t.equal(outputsOf(updated).result, 'UPDATE:two', 'the hook ran again with deploy_action UPDATE and the new value');

    await client.deleteStack(stack);
    const gone = await settle(stack, 'DELETE', 40_000, [booted.agent]);
    const deletedAt = Date.now() / 1000;
    t.notOk(gone && gone.stack_status === 'DELETE_FAILED', `stack deleted (${gone?.stack_status_reason ?? 'gone'})`);
    const runs = readFileSync(record, 'utf8')
      .trim()
      .split('\n')
      .map((l) => l.split(' '));
    t.same(
      runs.map((r) => `${r[0]} ${r[1]}`),
      ['CREATE one', 'UPDATE two', 'DELETE two'],
      'one run per action, in order',
    );
    const deleteRun = Number(runs[2]?.[2]);
    t.ok(deleteRun > 0 && deleteRun <= deletedAt, 'the DELETE run happened before Heat finished deleting');
  },
);

t.test('a deployment whose group has no hook is reported to Heat at once', SCENARIO, async (t) => {
  const stack = 'cfn-no-hook';
  const booted = await boot(t, stack, 'no-hook.yaml', {});
  // The stack's own timeout is 10 minutes: a result within this scenario's bound came from the agent's signal.
  const done = (await settle(stack, 'CREATE', 60_000, [booted.agent])) as Stack;
  t.equal(done.stack_status, 'CREATE_FAILED');
  t.notMatch(done.stack_status_reason, /timed out/i, 'not a timeout');
  t.match(done.stack_status_reason, /status code/, 'failed by the signalled status code');
  const record = await deploymentRecord(stack, 'deployment');
  t.match(String(record.output_values?.deploy_stderr), /no-such-tool/, 'stderr names the group without a hook');
});

t.test(
  'os-apply-config data (CFN_SIGNAL by default) is signalled once its cycle succeeded; apply-config renders the tree again',
  { timeout: SCENARIO.timeout },
  async (t) => {
    const stack = 'cfn-os-apply-config';
    const conf = 'etc/demo/greeting.conf';
    const booted = await boot(
      t,
      stack,
      'os-apply-config.yaml',
      { greeting: 'hello from heat' },
      scenarioDir(stack),
      (instance) => {
        const templates = path.join(instance.root, 'usr/libexec/os-apply-config/templates');
        mkdirSync(path.join(templates, path.dirname(conf)), { recursive: true });
        writeFileSync(path.join(templates, conf), 'greeting={{demo.greeting}}\naction={{demo.action}}\n');
      },
    );
    // The stack's own timeout is 10 minutes: completing within this scenario's bound means the agent signalled.
    const done = (await settle(stack, 'CREATE', 60_000, [booted.agent])) as Stack;
    t.equal(done.stack_status, 'CREATE_COMPLETE', done.stack_status_reason);
    t.equal(
      readFileSync(path.join(booted.instance.root, conf), 'utf8'),
      'greeting=hello from heat\naction=CREATE\n',
      'the structured data rendered through the template tree',
    );
    const out = outputsOf(done);
    t.equal(out.data_status, 0, 'the os-apply-config deployment was signalled as a success');
    t.equal(
      out.apply_stdout ?? '',
      '',
      'the apply-config hook signalled its run with an empty stdout, as os-apply-config',
    );
    t.equal(await signalEvents(stack, 'data_deployment'), 1, 'signalled once');
    t.equal(await signalEvents(stack, 'apply_deployment'), 1, 'signalled once');
  },
);

t.test(
  'agent killed with SIGKILL while a hook runs, then restarted: the stack completes, each deployment signalled once',
  SCENARIO,
  async (t) => {
    const stack = 'cfn-kill';
    const dir = scenarioDir(stack);
    const markers = path.join(dir, 'markers');
    const booted = await boot(t, stack, 'kill-restart.yaml', { markers }, dir);
    const deadline = Date.now() + 60_000;
    while (!readdirSync(markers).some((f) => f.startsWith('slow-started-'))) {
      const problem = booted.agent.problem();
      if (problem) throw new Error(`waiting for the slow deployment to start: ${problem}`);
      if (Date.now() > deadline) throw new Error('the slow deployment never started');
      await new Promise((r) => setTimeout(r, 100));
    }
    await booted.agent.crash();
    t.pass('agent killed with SIGKILL while the slow hook ran');
    const second = startAgent(booted.instance, booted.logFile);
    t.teardown(() => second.stop());
    const done = (await settle(stack, 'CREATE', 70_000, [second])) as Stack;
    t.equal(done.stack_status, 'CREATE_COMPLETE', done.stack_status_reason);
    t.same(outputsOf(done), { quick: 'quick', slow: 'slow' });
    // A few more polls: a duplicate signal would show up now.
    await new Promise((r) => setTimeout(r, 3000));
    t.equal(await signalEvents(stack, 'quick'), 1, 'quick signalled once');
    t.equal(await signalEvents(stack, 'slow'), 1, 'slow signalled once');
    t.equal(
      readdirSync(markers).filter((f) => f.startsWith('quick-ran-')).length,
      1,
      'the quick deployment was not run again after the restart',
    );
  },
);

t.test(
  "heat-cfntools' way: cfn-init -s -r with an AWS::IAM::AccessKey's keys, cfn-signal to a wait condition, and the daemon's cfn-hup applying a stack update",
  { timeout: 150_000 },
  async (t) => {
    const stack = 'cfn-tools';
    const dir = scenarioDir(stack);
    const root = path.join(dir, 'root');
    const markers = path.join(dir, 'markers');
    mkdirSync(markers, { recursive: true });
    await client.createStack(stack, template('cfn-tools.yaml'), { greeting: 'v1', markers });
    await client.waitResource(stack, 'boot', 60_000);
    await client.waitResource(stack, 'web', 60_000);
    // What user-data would give the instance: the keys and the handle's pre-signed URL.
    const boot = (await client.resourceMetadata(stack, 'boot')) as Record<string, string>;
    t.match(boot.handle, /^http:\/\/127\.0\.0\.1:\d+\/v1\/waitcondition\//, "the handle's URL is loopback");
    // The instance: Heat's boot data naming heat-api-cfn (as a HEAT_CFNTOOLS server gets it), no agent config beyond
    // loopback sources, and the bundle under heat-cfntools' command names (links, as the image element makes them).
    mkdirSync(path.join(root, 'var/lib/heat-cfntools'), { recursive: true, mode: 0o700 });
    writeFileSync(
      path.join(root, 'var/lib/heat-cfntools/cfn-metadata-server'),
      `http://127.0.0.1:${heat!.cfnPort}/v1/\n`,
    );
    mkdirSync(path.join(root, 'var/lib/os-collect-config/local-data'), { recursive: true, mode: 0o700 });
    mkdirSync(path.join(root, 'etc/cfn'), { recursive: true });
    writeFileSync(
      path.join(root, 'etc/os-collect-config.conf'),
      '[DEFAULT]\ncollectors = local\ncommand = /bin/true\nmin_polling_interval = 1\npolling_interval = 1\n[agent]\npoll_jitter = 0\n',
      { mode: 0o600 },
    );
    const bin = path.join(dir, 'bin');
    mkdirSync(bin, { recursive: true });
    // Each name linked to the entry it starts, beside the bundle under test, as the image element links them.
    const entries = commandEntries();
    for (const name of ['cfn-init', 'cfn-signal'])
      symlinkSync(path.join(path.dirname(BUNDLE), entries[name] ?? ''), path.join(bin, name));
    const tool = (name: string, args: string[]) =>
      run(process.execPath, [path.join(bin, name), '--root', root, ...args], { timeout: 60_000 }).then(
        (r) => ({ code: 0, ...r }),
        (e: { code?: number; stdout?: string; stderr?: string }) => ({
          code: e.code ?? -1,
          stdout: e.stdout ?? '',
          stderr: e.stderr ?? '',
        }),
      );

    const init = await tool('cfn-init', [
      '-s',
      stack,
      '-r',
      'web',
      '--access-key',
      boot.access_key!,
      '--secret-key',
      boot.secret_key!,
      '--region',
      'RegionOne',
    ]);
    t.equal(init.code, 0, 'cfn-init fetched the metadata from heat-api-cfn and applied it', { stderr: init.stderr });
    t.equal(readFileSync(path.join(root, 'etc/cfn-demo/greeting'), 'utf8'), 'v1');
    t.equal(statSync(path.join(root, 'etc/cfn-demo/greeting')).mode & 0o777, 0o640);
    t.equal(readFileSync(path.join(markers, 'commands.log'), 'utf8'), 'applied v1\n', 'its command ran');
    t.ok(existsSync(path.join(root, 'var/cache/heat-cfntools/last_metadata_web')), 'the metadata saved for cfn-hup');
    t.notMatch(readFileSync(path.join(root, 'var/log/cfn-init.log'), 'utf8'), boot.secret_key!, 'no secret in the log');

    const signal = await tool('cfn-signal', [
      '-e',
      '0',
      '-i',
      'web-1',
      '-d',
      'configured v1',
      '-r',
      'cfn-init done',
      boot.handle!,
    ]);
    t.equal(signal.code, 0, 'cfn-signal delivered', { stderr: signal.stderr });
    const created = (await client.waitFor(stack, 'CREATE', 60_000)) as Stack;
    t.equal(created.stack_status, 'CREATE_COMPLETE', created.stack_status_reason);
    t.same(JSON.parse(String(outputsOf(created).wait_data)), { 'web-1': 'configured v1' }, "the wait condition's data");

    // cfn-hup, as a template writes it (cfn-auto-reloader), run by the daemon itself: no cron line.
    writeFileSync(
      path.join(root, 'etc/cfn/cfn-hup.conf'),
      `[main]\nstack=${stack}\ncredential-file=/etc/cfn/cfn-credentials\nregion=RegionOne\ninterval=0.05\n`,
    );
    writeFileSync(
      path.join(root, 'etc/cfn/cfn-credentials'),
      `AWSAccessKeyId=${boot.access_key}\nAWSSecretKey=${boot.secret_key}\n`,
      { mode: 0o600 },
    );
    writeFileSync(
      path.join(root, 'etc/cfn/hooks.conf'),
      '[cfn-auto-reloader-hook]\ntriggers=post.update\npath=Resources.web.Metadata.AWS::CloudFormation::Init\n' +
        `action=${process.execPath} ${path.join(bin, 'cfn-init')} --root ${root} -s ${stack} -r web --credential-file /etc/cfn/cfn-credentials && echo reloaded >> ${markers}/hup.log\nrunas=root\n`,
    );
    const logFile = path.join(heat!.dir, `agent-${stack}.log`);
    const agent = startAgent({ root, markers, readConfig: () => '' }, logFile);
    t.teardown(async () => {
      await agent.stop();
      if (!t.passing()) t.comment(`agent log: ${logFile}`);
    });
    const until = async (what: string, cond: () => boolean, ms: number) => {
      const deadline = Date.now() + ms;
      while (!cond()) {
        const problem = agent.problem();
        if (problem) throw new Error(`waiting for ${what}: ${problem}`);
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; agent log: ${logFile}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    };
    await until('the first cfn-hup check', () => agent.lines.some((l) => l.msg === 'cfn-hup check done'), 30_000);
    t.notOk(existsSync(path.join(markers, 'hup.log')), 'nothing changed since cfn-init: no action');

    await client.updateParameters(stack, { greeting: 'v2' });
    const updated = (await client.waitFor(stack, 'UPDATE', 60_000)) as Stack;
    t.equal(updated.stack_status, 'UPDATE_COMPLETE', updated.stack_status_reason);
    await until('the hook fired', () => existsSync(path.join(markers, 'hup.log')), 60_000);
    t.equal(readFileSync(path.join(markers, 'hup.log'), 'utf8'), 'reloaded\n', 'the hook action ran once');
    t.equal(readFileSync(path.join(root, 'etc/cfn-demo/greeting'), 'utf8'), 'v2', 'cfn-init applied the new metadata');
    t.equal(readFileSync(path.join(markers, 'commands.log'), 'utf8'), 'applied v1\napplied v2\n');
    t.ok(agent.lines.some((l) => l.msg === 'hook action succeeded' && l.component === 'cfn-hup'));
    t.notMatch(readFileSync(logFile, 'utf8'), boot.secret_key!, "no secret in the agent's log");
  },
);
