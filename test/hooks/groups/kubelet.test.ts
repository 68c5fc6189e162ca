import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { containerPatterns } from '../../../src/hooks/groups/kubelet.js';
import type { TapTest } from '../../helpers/http-test-server.js';
import { FAKE_TOOLS, SYSTEM_PATH, modeOf, readRecords, runHookInProcess, HOOK_MODES } from '../hook-process.js';

// The kubelet hook against a recording fake kubelet: no kubelet exists in Debian bookworm, so
// test/fixtures/fake-tools/kubelet-docker plays docker as a standalone kubelet drives it, running the containers of the pod
// manifests it finds in the manifest directory. Waits are shortened through upstream's own options.

function setup(t: TapTest) {
  const dir = t.testdir();
  const manifests = path.join(dir, 'kubelet-manifests');
  const record = path.join(dir, 'record.jsonl');
  const env: Record<string, string> = {
    PATH: SYSTEM_PATH,
    HEAT_KUBELET_MANIFESTS: manifests,
    HEAT_DOCKER_CMD: path.join(FAKE_TOOLS, 'kubelet-docker'),
    FAKE_KUBELET_MANIFESTS: manifests,
    FAKE_TOOL_RECORD: record,
    FAKE_DOCKER_IMAGES: 'kollaglue/rabbitmq:latest,mariadb:10.11,other:1',
  };
  return { dir, manifests, record, env };
}

const ID = 'a50ae8dd-b0c4-407f-8732-3571b3a0f28b';
const POD = {
  version: 'v1beta2',
  volumes: [{ name: 'mariadb-data' }],
  containers: [
    { image: 'kollaglue/rabbitmq', name: 'rabbitmq', ports: [{ containerPort: 5672, hostPort: 5672 }] },
    { image: 'mariadb:10.11', name: 'mariadb', env: [{ name: 'DB_ROOT_PASSWORD', value: 'secret-db-pw' }] },
  ],
};
const deployment = (config: unknown, options: Record<string, unknown> = {}) => ({
  id: ID,
  name: '20_db',
  group: 'kubelet',
  inputs: [],
  outputs: [],
  config,
  options: { images_timeout: 2, containers_timeout: 2, poll_period: 0.2, ...options },
});

t.test(
  "container names: upstream's pattern (its own test's cases), also without the API's leading \"/\"",
  async (t) => {
    const pattern = containerPatterns('fc9070b3-ba4e-4f22-b732-5ffdcdb40b74', ['mariadb']).get('mariadb')!;
    t.ok(
      pattern.test(
        '/k8s_mariadb.dac8ccce_fc9070b3ba4e4f2uv6pejpu5nqbmrqoungurhtob5gvt.default.file_2c8cf9fc94674e8buv6pejpu5nqbmrqoungurhtob5gvt_dcd1e1d9',
      ),
    );
    t.ok(pattern.test('/k8s_mariadb.dac8ccce_fc9070b3ba4e4f2a'));
    t.ok(pattern.test('k8s_mariadb.dac8ccce_fc9070b3ba4e4f2a'), 'as the CLI prints it');
    t.notOk(pattern.test('/k8s_mysqldb.dac8ccce_fc9070b3ba4e4f2a'));
    t.notOk(pattern.test('/k8s_mariadb.dac8ccc_fc9070b3ba4e4f2a'));
    t.notOk(pattern.test('/k8s_mariadb.dac8ccce_gc9070b3ba4e4f22a'));
    t.notOk(
      containerPatterns('x', ['a.b']).get('a.b')!.test('k8s_aXb.dac8ccce_x'),
      'a container name is matched literally',
    );
  },
);

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(
    `${mode}: recording fake kubelet: the manifest is written, images and containers come up: success`,
    async (t) => {
      const { manifests, record, env } = setup(t);
      const run = await runIn('kubelet', deployment(POD), { env: { ...env, FAKE_KUBELET_START_AFTER: '2' } });
      t.equal(run.code, 0, 'exits 0', { stderr: run.stderr });
      t.equal(run.result.deploy_status_code, 0, 'success', { result: run.result });
      t.same(
        Object.keys(run.result),
        ['deploy_stdout', 'deploy_stderr', 'deploy_status_code'],
        "upstream's result fields",
      );
      t.equal(run.result.deploy_stderr, '', 'no warnings');
      const manifest = path.join(manifests, `${ID}.json`);
      t.equal(
        readFileSync(manifest, 'utf8'),
        JSON.stringify(POD, null, 2),
        'the manifest as upstream wrote it (indent 2, keys in order)',
      );
      t.equal(modeOf(manifest), '600');
      t.equal(modeOf(manifests), '700');
      t.same(readdirSync(manifests), [`${ID}.json`], 'no temp file left where the kubelet reads');
      const stdout = String(run.result.deploy_stdout);
      t.match(stdout, /^\[\d{4}-\d\d-\d\dT[\d:.]+Z\] \(heat-config\) \[INFO\] pod manifest written manifest=/);
      t.match(stdout, '[INFO] image found image=kollaglue/rabbitmq:latest');
      t.match(stdout, '[INFO] image found image=mariadb:10.11');
      t.match(stdout, /\[INFO\] container running container=rabbitmq name=k8s_rabbitmq\.[0-9a-f]{8}_a50ae8ddb0c4407/);
      t.match(stdout, /\[INFO\] container running container=mariadb name=k8s_mariadb\.[0-9a-f]{8}_a50ae8ddb0c4407/);
      const calls = readRecords(record).map((r) => r.argv);
      t.same(calls[0], ['images', '--format', '{{.Repository}}:{{.Tag}}'], 'images first, as upstream');
      t.same(
        calls.slice(1),
        Array(3).fill(['ps', '--format', '{{.Names}}']),
        'then running containers, polled until they appear',
      );
      t.equal(
        readRecords(record)[0]?.env.FAKE_KUBELET_MANIFESTS,
        manifests,
        "docker gets the hook's environment (DOCKER_HOST included)",
      );
    },
  );

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(
    `${mode}: recording fake kubelet: a container that exits non-zero: failure after containers_timeout`,
    async (t) => {
      const { manifests, env } = setup(t);
      const run = await runIn('kubelet', deployment(POD, { containers_timeout: 1 }), {
        env: { ...env, FAKE_KUBELET_EXITED: 'mariadb=3' },
      });
      t.equal(run.code, 0, 'no crash');
      t.equal(run.result.deploy_status_code, 1);
      t.match(run.result.deploy_stdout, /container running container=rabbitmq/);
      const stderr = String(run.result.deploy_stderr);
      t.match(
        stderr,
        /^\[.*\] \(heat-config\) \[ERROR\] pod not running id=a50ae8dd-b0c4-407f-8732-3571b3a0f28b reason=timed out after 1 seconds waiting for containers: mariadb \(mariadb: k8s_mariadb\.[0-9a-f]{8}_\S+ Exited \(3\) 3 seconds ago\)\n$/,
      );
      t.ok(
        existsSync(path.join(manifests, `${ID}.json`)),
        'the manifest stays: the kubelet keeps trying, and the next run waits again',
      );
    },
  );

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(
    `${mode}: recording fake kubelet: an image that never appears, a pod the kubelet never starts, docker failing`,
    async (t) => {
      const { dir, env } = setup(t);
      const image = await runIn(
        'kubelet',
        deployment({ containers: [{ name: 'web', image: 'nginx' }] }, { images_timeout: 0.5 }),
        { env },
      );
      t.equal(image.result.deploy_status_code, 1);
      t.match(image.result.deploy_stderr, /reason=timed out after 0\.5 seconds waiting for images: nginx:\n$/);

      // The kubelet reads another directory: the containers never appear.
      const never = await runIn('kubelet', deployment(POD, { containers_timeout: 0.5 }), {
        env: { ...env, FAKE_KUBELET_MANIFESTS: path.join(dir, 'elsewhere') },
      });
      t.equal(never.result.deploy_status_code, 1);
      t.match(
        never.result.deploy_stderr,
        /reason=timed out after 0\.5 seconds waiting for containers: rabbitmq, mariadb\n$/,
      );

      const failing = await runIn('kubelet', deployment(POD, { images_timeout: 0.5 }), {
        env: { ...env, FAKE_DOCKER_FAIL: 'Cannot connect to the Docker daemon' },
      });
      t.equal(failing.result.deploy_status_code, 1);
      const stderr = String(failing.result.deploy_stderr);
      t.match(stderr, '[WARNING] docker failed command=', 'the failure is reported');
      t.equal(stderr.split('docker failed').length, 2, 'once, not at every poll');
      t.match(
        stderr,
        /waiting for images: kollaglue\/rabbitmq:, mariadb:10\.11; docker last failed with status 1: Cannot connect to the Docker daemon\n$/,
      );
    },
  );

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: bad input and a missing docker: failure results naming the cause`, async (t) => {
    const { manifests, env } = setup(t);
    const cases: Array<[unknown, Record<string, unknown>, string | RegExp]> = [
      [['not', 'a pod'], {}, 'the kubelet config must be a pod manifest (an object with "containers")'],
      [
        { containers: { name: 'x' } },
        {},
        'the pod manifest\'s "containers" must be a list of objects, each with a "name" and an "image"',
      ],
      [
        { containers: [{ name: 'x' }] },
        {},
        /"containers" must be a list of objects, each with a "name" and an "image"/,
      ],
      [
        POD,
        { containers_timeout: '10' },
        'the kubelet option containers_timeout must be a number of seconds (0 or more), not "10"',
      ],
      [POD, { poll_period: -1 }, 'the kubelet option poll_period must be a number of seconds (0 or more), not -1'],
    ];
    // The checks are the same code either way; the executable runs two of them (each start costs about a second).
    for (const [config, options, message] of mode === 'executable' ? cases.slice(0, 2) : cases) {
      const run = await runIn('kubelet', deployment(config, options), { env });
      t.equal(run.code, 0, 'no crash');
      t.equal(run.result.deploy_status_code, 1);
      t.match(run.result.deploy_stderr, message);
    }
    t.notOk(existsSync(manifests), 'no manifest written for a bad deployment');

    const missing = await runIn('kubelet', deployment(POD), { env: { ...env, HEAT_DOCKER_CMD: 'no-such-docker' } });
    t.equal(missing.result.deploy_status_code, 1);
    t.match(
      missing.result.deploy_stderr,
      /^docker is not installed: the command "no-such-docker" was not found .*Install docker \(Debian: docker\.io\)\. Or set HEAT_DOCKER_CMD/,
    );

    const empty = await runIn('kubelet', deployment({ version: 'v1beta2' }), { env });
    t.equal(empty.result.deploy_status_code, 0, 'a pod without containers has nothing to wait for, as upstream');
  });

t.test('in-process: with podman and no docker, the hook fails saying docker is missing, as doctor says', async (t) => {
  const { dir, manifests, env } = setup(t);
  const bin = path.join(dir, 'bin');
  mkdirSync(bin);
  symlinkSync(path.join(FAKE_TOOLS, 'podman'), path.join(bin, 'podman'));
  const { HEAT_DOCKER_CMD: _unset, ...noVariable } = env;
  const run = await runHookInProcess('kubelet', deployment(POD), { env: { ...noVariable, PATH: bin } });
  t.equal(run.result.deploy_status_code, 1);
  t.match(run.result.deploy_stderr, /^docker is not installed: the command "docker" was not found/);
  t.ok(existsSync(manifests), 'the manifest was written first, as before');
});

t.test('in-process: recording fake kubelet: a deployment stopped by its timeout stops polling docker', async (t) => {
  const { dir, record, env } = setup(t);
  const run = await runHookInProcess('kubelet', deployment(POD, { containers_timeout: 600, poll_period: 0.1 }), {
    // Long enough for a few polls of the fake docker (a Node.js process) on a loaded machine; 1 s was not.
    env: { ...env, FAKE_KUBELET_MANIFESTS: path.join(dir, 'elsewhere') },
    timeoutMs: 3000,
  });
  t.equal(run.code, null, 'reported as stopped');
  t.equal(run.signal, 'SIGTERM');
  const calls = readRecords(record).length;
  t.ok(calls > 1, 'it was polling');
  // A hook still polling would call docker every 100 ms; half a second later nothing more has been recorded.
  await new Promise((resolve) => setTimeout(resolve, 500));
  t.equal(readRecords(record).length, calls, 'no docker call after the stop');
});

// heat-templates' kubelet example on a server where docker is installed but its daemon is not running: Debian's docker
// CLI against a socket nobody listens on. The hook fails once daemon_timeout has passed, naming the daemon, instead of
// waiting out images_timeout.
const DEAD_SOCKET = `unix:///tmp/oca-kubelet-dead-${process.pid}.sock`;
for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: docker's daemon unreachable: fails after daemon_timeout, naming the daemon`, async (t) => {
    const { env } = setup(t);
    const run = await runIn('kubelet', deployment(POD, { images_timeout: 20, daemon_timeout: 0.3 }), {
      env: { ...env, HEAT_DOCKER_CMD: '/usr/bin/docker', DOCKER_HOST: DEAD_SOCKET },
    });
    t.equal(run.result.deploy_status_code, 1);
    t.match(
      String(run.result.deploy_stderr),
      /cannot reach its daemon .*Start the docker service, or check DOCKER_HOST/,
    );
    t.notMatch(String(run.result.deploy_stderr), /timed out after 20 seconds/, 'not held until images_timeout');
  });
