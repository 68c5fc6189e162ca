import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import t from 'tap';
import type { TapTest } from '../../helpers/http-test-server.js';
import { HOOK_MODES, SYSTEM_PATH } from '../hook-process.js';

// The one rule for a tool's daemon (src/hooks/kit/daemon-reach.ts), through the real hooks that follow it and
// Debian's real docker CLI and docker-compose: a daemon that accepts connections and never answers (a socket this
// test serves), and a socket nobody listens on. Each deployment fails soon after its daemon_timeout, naming the
// daemon and what to do, instead of being held until the deployment's timeout (here the runner's 60 s bound).

const DOCKER = '/usr/bin/docker';
const COMPOSE = '/usr/bin/docker-compose';
const skip = existsSync(DOCKER) ? false : `${DOCKER} is missing (apt-get install docker.io)`;
const skipCompose = skip || (existsSync(COMPOSE) ? false : `${COMPOSE} is missing (apt-get install docker-compose)`);
/** Far below the runner's bound: a hook held by its daemon is stopped there, and the test fails. */
const RUN_TIMEOUT_MS = 45_000;

/** A short directory for a socket (a unix socket's path has at most 107 bytes), removed after the test. */
function socketDir(t: TapTest): string {
  const dir = mkdtempSync('/tmp/oca-reach-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A unix socket that accepts every connection and never answers: a daemon that hangs. */
async function hangingDaemon(t: TapTest): Promise<string> {
  const socket = path.join(socketDir(t), 'docker.sock');
  const held: net.Socket[] = [];
  const server = net.createServer((conn) => held.push(conn));
  await new Promise<void>((resolve) => server.listen(socket, resolve));
  t.teardown(() => {
    for (const conn of held) conn.destroy();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return `unix://${socket}`;
}

const deadSocket = (t: TapTest) => `unix://${path.join(socketDir(t), 'nobody.sock')}`;

function deployment(group: string, config: unknown, options: Record<string, unknown>) {
  return { id: 'b1e3c0de-0000-4000-8000-000000000001', name: 'web', group, inputs: [], outputs: [], config, options };
}

function hookEnv(t: TapTest, dockerHost: string, extra: Record<string, string> = {}) {
  const dir = t.testdir();
  const home = path.join(dir, 'home');
  mkdirSync(home, { recursive: true });
  return {
    PATH: SYSTEM_PATH,
    HOME: home,
    DOCKER_HOST: dockerHost,
    HEAT_DOCKER_COMPOSE_WORKING: path.join(dir, 'compose'),
    HEAT_KUBELET_MANIFESTS: path.join(dir, 'manifests'),
    ...extra,
  };
}

const CONTAINERS = { web: { image: 'bb:test', command: 'true', net: 'none' } };
const COMPOSE_FILE = { version: '2', services: { web: { image: 'bb:test', network_mode: 'none' } } };
const POD = { version: 'v1beta2', containers: [{ name: 'web', image: 'bb:test' }] };
const CASES: ReadonlyArray<{
  group: string;
  config: unknown;
  options: Record<string, unknown>;
  env: Record<string, string>;
  skip: string | false;
}> = [
  { group: 'docker-cmd', config: CONTAINERS, options: {}, env: {}, skip },
  {
    group: 'docker-compose',
    config: COMPOSE_FILE,
    options: {},
    env: { HEAT_DOCKER_COMPOSE_CMD: COMPOSE },
    skip: skipCompose,
  },
  {
    group: 'kubelet',
    config: POD,
    options: { images_timeout: 30, containers_timeout: 30, poll_period: 0.2 },
    env: { HEAT_DOCKER_CMD: DOCKER },
    skip,
  },
];

const WHAT_TO_DO =
  /cannot reach its daemon \(.*\)\. Start the docker service, or check DOCKER_HOST; the deployment option daemon_timeout/;

for (const { name: mode, run } of HOOK_MODES)
  for (const c of CASES) {
    // Each takes the probe's 2 s twice: the executable way only for docker-cmd, whose tool the hook's own process
    // stops there.
    const hangSkip = c.skip || (mode === 'executable' && c.group !== 'docker-cmd' ? 'covered in-process' : false);
    t.test(
      `${mode}: ${c.group}: a daemon that accepts and never answers fails the deployment`,
      { skip: hangSkip },
      async (t) => {
        const env = hookEnv(t, await hangingDaemon(t), c.env);
        const res = await run(c.group, deployment(c.group, c.config, { ...c.options, daemon_timeout: 0.5 }), {
          env,
          timeoutMs: RUN_TIMEOUT_MS,
        });
        t.equal(res.signal, null, 'the hook ended by itself');
        t.equal(res.result.deploy_status_code, 1);
        t.match(String(res.result.deploy_stderr), WHAT_TO_DO);
        t.match(String(res.result.deploy_stderr), /no answer within 2 seconds, nor to a probe within 2 seconds/);
      },
    );

    t.test(
      `${mode}: ${c.group}: a socket nobody listens on fails once daemon_timeout has passed`,
      { skip: c.skip },
      async (t) => {
        const env = hookEnv(t, deadSocket(t), c.env);
        const res = await run(c.group, deployment(c.group, c.config, { ...c.options, daemon_timeout: 0.3 }), {
          env,
          timeoutMs: RUN_TIMEOUT_MS,
        });
        t.equal(res.result.deploy_status_code, 1);
        t.match(String(res.result.deploy_stderr), WHAT_TO_DO);
        t.match(String(res.result.deploy_stderr), /unreachable for 0\.3 seconds/);
      },
    );
  }

t.test(
  'daemon_timeout that is not a number of seconds fails the deployment, naming the option',
  { skip },
  async (t) => {
    for (const group of ['docker-cmd', 'docker-compose', 'kubelet']) {
      const c = CASES.find((x) => x.group === group)!;
      const res = await HOOK_MODES[1]!.run(
        group,
        deployment(group, c.config, { ...c.options, daemon_timeout: '0x10' }),
        {
          env: hookEnv(t, deadSocket(t), c.env),
          timeoutMs: RUN_TIMEOUT_MS,
        },
      );
      t.equal(res.result.deploy_status_code, 1, group);
      t.match(
        String(res.result.deploy_stderr),
        new RegExp(`the ${group} option daemon_timeout must be a number of seconds`),
      );
    }
  },
);
