import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { parse as parseYaml } from 'yaml';
import { loadBuiltinHook } from '../../../src/hooks/registry.js';
import { runRemovalInProcess } from '../../../src/hooks/host/in-process.js';
import { DOCKER, dockerdMissing, IMAGE, startDockerd, type Dockerd } from '../../helpers/dockerd.js';
import type { TapTest } from '../../helpers/http-test-server.js';
import { captureLog } from '../../helpers/log-capture.js';
import {
  DEPLOY_INPUTS,
  FAKE_TOOLS,
  HOOK_MODES,
  SECRET_INPUTS,
  assertNoSecrets,
  modeOf,
  readRecords,
} from '../hook-process.js';

// The docker-compose hook with Debian's docker-compose (v1) against a private Debian dockerd
// (test/helpers/dockerd.ts). Compose v2 is not packaged in Debian: its use is checked with a recording fake docker.

const COMPOSE_V1 = '/usr/bin/docker-compose';
const skip =
  dockerdMissing() ||
  (existsSync(COMPOSE_V1) ? false : `${COMPOSE_V1} is missing (apt-get install docker-compose; .ci/run installs it)`);
const daemon: Dockerd | undefined = skip ? undefined : await startDockerd();
if (daemon) t.teardown(() => daemon.stop());

/** Debian's docker and docker-compose first, and the test's node for the hook executable. */
const PATH = `${path.dirname(process.execPath)}:/usr/bin:/bin:/usr/sbin:/sbin`;
/** A socket nobody listens on (a test directory's path is too long for a socket). */
const DEAD_SOCKET = `unix:///tmp/oca-dead-${process.pid}.sock`;

function setup(t: TapTest) {
  const dir = t.testdir();
  const home = path.join(dir, 'home');
  mkdirSync(home);
  const working = path.join(dir, 'lib', 'heat-config-docker-compose');
  return {
    dir,
    working,
    env: { PATH, HOME: home, DOCKER_HOST: daemon?.host ?? '', HEAT_DOCKER_COMPOSE_WORKING: working },
  };
}

const deployment = (id: string, name: string, config: unknown, inputs: unknown[] = [], options = {}) => ({
  id,
  name,
  group: 'docker-compose',
  options,
  inputs: [...DEPLOY_INPUTS, ...SECRET_INPUTS, ...inputs],
  outputs: [],
  config,
});
const DELETE = [{ name: 'deploy_action', value: 'DELETE' }];

const docker = (...args: string[]) => daemon!.docker(...args);
/** Containers of a compose project (v1 keeps "-" and "_" of the directory name, lower case). */
const containersOf = (project: string) =>
  docker('ps', '-a', '-q', '--filter', `label=com.docker.compose.project=${project}`)
    .stdout.split('\n')
    .filter((c) => c !== '');

const composeFile = (extra: Record<string, unknown> = {}) => ({
  version: '2.1',
  // SIGKILL: busybox's sleep as pid 1 ignores SIGTERM, and `down` would wait 10 s for it.
  services: {
    app: {
      image: IMAGE,
      command: 'sleep 300',
      network_mode: 'none',
      stop_signal: 'SIGKILL',
      env_file: ['app.env', 'conf/extra.env'],
      ...extra,
    },
  },
});

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(
    `${mode}: the project comes up with its env files; DELETE brings it down and removes its files`,
    { skip },
    async (t) => {
      const { working, env } = setup(t);
      const name = `web-${mode}`;
      const project = path.join(working, name);
      // The env_files input as a list in one mode, as its JSON text in the other (both reach the hook).
      const files = [
        { file_name: 'app.env', content: 'GREETING=hello from env\n' },
        { file_name: 'conf/extra.env', content: 'EXTRA=1\n' },
        { file_name: 'unused.env', content: 'X=1\n' },
      ];
      const envFiles = { name: 'env_files', value: mode === 'executable' ? files : JSON.stringify(files) };
      const run = await runIn('docker-compose', deployment(`c-${mode}`, name, composeFile(), [envFiles]), { env });
      t.equal(run.code, 0, { stderr: run.stderr });
      t.equal(run.result.deploy_status_code, 0, 'up succeeded', { result: run.result });
      t.match(run.result.deploy_stderr, /Creating web-/, "compose's progress is the result's stderr");
      t.same(
        parseYaml(readFileSync(path.join(project, 'docker-compose.yml'), 'utf8')),
        composeFile(),
        'the compose file, in <working>/<name>',
      );
      t.equal(
        readFileSync(path.join(project, 'app.env'), 'utf8'),
        'GREETING=hello from env\n',
        'an env file the compose file names is written',
      );
      t.equal(readFileSync(path.join(project, 'conf/extra.env'), 'utf8'), 'EXTRA=1\n');
      t.notOk(
        existsSync(path.join(project, 'unused.env')),
        'an env file the compose file does not name is not written (upstream)',
      );
      t.equal(modeOf(project), '700');
      t.equal(modeOf(path.join(project, 'docker-compose.yml')), '600');
      t.equal(modeOf(path.join(project, 'app.env')), '600');
      const [container, ...more] = containersOf(name);
      t.ok(container, 'the project has a container');
      t.same(more, [], 'just one');
      t.equal(
        docker('exec', container!, 'sh', '-c', 'echo "$GREETING/$EXTRA"').stdout,
        'hello from env/1\n',
        'the env files reach the container',
      );
      t.same(
        docker('network', 'ls', '--format', '{{.Name}}')
          .stdout.split('\n')
          .filter((n) => n.startsWith('web')),
        [],
        'no network was made on the host',
      );
      assertNoSecrets(t, run.stderr, 'the log');

      const down = await runIn('docker-compose', deployment(`c-${mode}`, name, composeFile(), DELETE), { env });
      t.equal(down.result.deploy_status_code, 0, 'DELETE succeeded', { result: down.result });
      t.same(containersOf(name), [], 'DELETE brought the project down');
      t.notOk(existsSync(project), 'and removed its directory');
    },
  );

// Removal runs inside the agent only, so once; the hook runs as an executable here (the other way is tested above).
t.test(
  'leaving the metadata brings the project down, unless a newer deployment of the same name has taken it over',
  { skip },
  async (t) => {
    const { working, env } = setup(t);
    const mode = 'removal';
    const runIn = HOOK_MODES[0]!.run;
    const name = 'svc';
    const project = path.join(working, name);
    const hook = (await loadBuiltinHook('docker-compose'))!;
    const remove = (id: string) => runRemovalInProcess({ hook, id, env, log: captureLog().log });
    const first = await runIn('docker-compose', deployment(`old-${mode}`, name, composeFile({ env_file: undefined })), {
      env,
    });
    t.equal(first.result.deploy_status_code, 0, { result: first.result });
    const second = await runIn(
      'docker-compose',
      deployment(`new-${mode}`, name, composeFile({ env_file: undefined })),
      { env },
    );
    t.equal(second.result.deploy_status_code, 0, { result: second.result });
    await remove(`old-${mode}`);
    t.equal(
      containersOf(name).length,
      1,
      "the replaced deployment's removal leaves the project that its successor runs",
    );
    t.ok(existsSync(path.join(project, 'docker-compose.yml')));
    await remove(`new-${mode}`);
    t.same(containersOf(name), [], 'the removal of the deployment that owns it brings the project down');
    t.notOk(existsSync(project), 'and removes its directory');
    await remove(`new-${mode}`);
    t.pass('a second removal finds nothing to do');
  },
);

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: bad input and broken environments give a failure result, nothing written`, { skip }, async (t) => {
    const { dir, working, env } = setup(t);
    const failing = async (
      what: string,
      name: string,
      config: unknown,
      expected: RegExp,
      inputs: unknown[] = [],
      runEnv: Record<string, string> = env,
      options = {},
    ) => {
      const run = await runIn('docker-compose', deployment('bad', name, config, inputs, options), { env: runEnv });
      t.equal(run.code, 0, `${what}: the hook does not crash`, { stderr: run.stderr });
      t.not(run.result.deploy_status_code, 0, `${what}: a failure status`);
      t.match(run.result.deploy_stderr, expected, `${what}: deploy_stderr says why`);
      return run;
    };
    for (const hostile of ['../escape', 'a/b', '..']) {
      await failing(
        `name ${JSON.stringify(hostile)}`,
        hostile,
        composeFile(),
        /cannot name a compose project directory/,
      );
    }
    t.notOk(existsSync(path.join(dir, 'lib', 'escape')), 'nothing was written outside the working directory');
    for (const file of ['../../outside.env', '/etc/oca-test.env']) {
      await failing(
        `env file ${file}`,
        'envs',
        composeFile({ env_file: file }),
        /must be a path inside the compose project directory/,
        [{ name: 'env_files', value: [{ file_name: file, content: 'A=1\n' }] }],
      );
    }
    t.notOk(existsSync(path.join(working, 'envs')), 'a bad env file name leaves no project behind');
    t.notOk(existsSync(path.join(dir, 'lib', 'outside.env')));
    await failing('env_files not a list', 'envs', composeFile(), /env_files input must be a list/, [
      { name: 'env_files', value: '{"a": 1}' },
    ]);
    await failing('a config that is not a mapping', 'cfg', '- a\n- b\n', /must be a mapping/);
    const dead = await failing(
      'a daemon that is not running',
      'dead',
      composeFile({ env_file: undefined }),
      /compose up: docker-compose cannot reach its daemon \(.*Error while fetching server API version.*; unreachable for 0 seconds\)\. Start the docker service/,
      [],
      { ...env, DOCKER_HOST: DEAD_SOCKET },
      { daemon_timeout: 0 },
    );
    t.ok(existsSync(path.join(working, 'dead', 'docker-compose.yml')), 'the project is written, to be retried');
    t.ok(dead.result.deploy_status_code !== 0);
    const bin = path.join(dir, 'bin');
    mkdirSync(bin);
    symlinkSync(process.execPath, path.join(bin, 'node'));
    await failing(
      'no compose at all',
      'none',
      composeFile({ env_file: undefined }),
      /docker-compose is not installed: neither "docker compose" nor "docker-compose" works.*HEAT_DOCKER_COMPOSE_CMD/,
      [],
      { ...env, PATH: bin },
    );
    await failing(
      'a HEAT_DOCKER_COMPOSE_CMD that is not there',
      'none',
      composeFile({ env_file: undefined }),
      /docker-compose is not installed: the command ".*nowhere" was not found.*HEAT_DOCKER_COMPOSE_CMD/,
      [],
      { ...env, HEAT_DOCKER_COMPOSE_CMD: path.join(dir, 'nowhere') },
    );
  });

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: an env file is never written through a link that leads out of the project directory`, async (t) => {
    const { dir, working, env } = setup(t);
    const outside = path.join(dir, 'outside');
    mkdirSync(outside);
    mkdirSync(path.join(working, 'linked'), { recursive: true, mode: 0o700 });
    // Left there by an earlier deployment (cfn-init can make links): the env file name would lead through it.
    symlinkSync(outside, path.join(working, 'linked', 'conf'));
    const run = await runIn(
      'docker-compose',
      deployment('link', 'linked', composeFile({ env_file: 'conf/extra.env' }), [
        { name: 'env_files', value: [{ file_name: 'conf/extra.env', content: 'A=1\n' }] },
      ]),
      { env },
    );
    t.equal(run.code, 0, 'no crash', { stderr: run.stderr });
    t.equal(run.result.deploy_status_code, 1);
    t.match(
      run.result.deploy_stderr,
      /conf\/extra\.env is not written: .*conf is a symbolic link to .*outside, outside /,
    );
    t.same(readdirSync(outside), [], 'nothing written outside');
  });

const v2Missing =
  spawnSync(DOCKER, ['compose', 'version']).status === 0
    ? false
    : "Debian's docker has no compose v2 plugin (docker compose); its use is checked with the fake below";
t.test('compose v2 (docker compose) with the real plugin', { skip: skip || v2Missing }, async (t) => {
  const { env } = setup(t);
  const run = await HOOK_MODES[1]!.run(
    'docker-compose',
    deployment('v2', 'vtwo', composeFile({ env_file: undefined })),
    { env },
  );
  t.equal(run.result.deploy_status_code, 0, { result: run.result });
  t.match(run.stderr, /using compose v2/);
});

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(
    `${mode}: docker compose (v2) is preferred when it works; HEAT_DOCKER_COMPOSE_CMD wins (recording fake docker)`,
    async (t) => {
      const { dir, working } = setup(t);
      const bin = path.join(dir, 'bin');
      mkdirSync(bin);
      symlinkSync(process.execPath, path.join(bin, 'node'));
      symlinkSync(path.join(FAKE_TOOLS, 'docker'), path.join(bin, 'docker'));
      const record = path.join(dir, 'record.jsonl');
      const env = { PATH: bin, HEAT_DOCKER_COMPOSE_WORKING: working, FAKE_TOOL_RECORD: record };
      const run = await runIn('docker-compose', deployment('v2', 'vtwo', composeFile({ env_file: undefined })), {
        env,
      });
      t.equal(run.result.deploy_status_code, 0, { result: run.result });
      const calls = readRecords(record);
      t.same(
        calls.map((r) => r.argv),
        [
          ['compose', 'version'],
          ['compose', 'up', '-d', '--no-build'],
        ],
        'probed, then up',
      );
      t.equal(calls[1]?.cwd, path.join(working, 'vtwo'), 'in the project directory');
      const configured = await runIn('docker-compose', deployment('v2', 'vtwo', composeFile({ env_file: undefined })), {
        env: { ...env, HEAT_DOCKER_COMPOSE_CMD: path.join(bin, 'docker') },
      });
      t.equal(configured.result.deploy_status_code, 0);
      t.same(
        readRecords(record)
          .slice(2)
          .map((r) => r.argv),
        [['up', '-d', '--no-build']],
        'HEAT_DOCKER_COMPOSE_CMD runs as given, with no probe',
      );
    },
  );
