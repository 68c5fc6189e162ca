import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { loadBuiltinHook } from '../../../src/hooks/registry.js';
import { runRemovalInProcess } from '../../../src/hooks/host/in-process.js';
import { dockerdMissing, IMAGE, startDockerd, type Dockerd } from '../../helpers/dockerd.js';
import type { TapTest } from '../../helpers/http-test-server.js';
import { captureLog } from '../../helpers/log-capture.js';
import {
  DEPLOY_INPUTS,
  FAKE_TOOLS,
  HOOK_MODES,
  SECRET_INPUTS,
  assertNoSecrets,
  readRecords,
  runHook,
} from '../hook-process.js';

// The docker-cmd hook against a private Debian dockerd (test/helpers/dockerd.ts) with Debian's docker CLI; podman
// (not packaged here) is a recording fake.

const skip = dockerdMissing();
const daemon: Dockerd | undefined = skip ? undefined : await startDockerd();
if (daemon) t.teardown(() => daemon.stop());

/** Debian's docker CLI first (not another docker on PATH), and the test's node for the hook executable. */
const PATH = `${path.dirname(process.execPath)}:/usr/bin:/bin:/usr/sbin:/sbin`;

function hookEnv(t: TapTest, extra: Record<string, string> = {}): Record<string, string> {
  const home = path.join(t.testdir(), 'home');
  mkdirSync(home);
  return { PATH, HOME: home, DOCKER_HOST: daemon!.host, ...extra };
}

const deployment = (id: string, config: unknown, extra: Record<string, unknown> = {}) => ({
  id,
  name: 'containers',
  group: 'docker-cmd',
  options: {},
  inputs: [...DEPLOY_INPUTS, ...SECRET_INPUTS],
  outputs: [],
  config,
  ...extra,
});

/** A socket nobody listens on (a test directory's path is too long for a socket). */
const DEAD_SOCKET = `unix:///tmp/oca-dead-${process.pid}.sock`;
const docker = (...args: string[]) => daemon!.docker(...args);
/** Names of the containers of one deployment, sorted. */
const namesOf = (configId: string) =>
  docker('ps', '-a', '--filter', `label=config_id=${configId}`, '--format', '{{.Names}}')
    .stdout.split('\n')
    .filter((n) => n !== '')
    .sort();
const labelsOf = (name: string) =>
  JSON.parse(docker('inspect', '--format', '{{json .Config.Labels}}', name).stdout) as Record<string, string>;

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(
    `${mode}: containers run in start order, labelled; exec runs in this deployment's container`,
    { skip },
    async (t) => {
      const id = `run-${mode}`;
      const config = {
        [`${mode}-second`]: { image: IMAGE, command: ['echo', 'second'], detach: false, net: 'none', start_order: 2 },
        [`${mode}-first`]: { image: IMAGE, command: 'echo  first', detach: false, net: 'none', start_order: 1 },
        [`${mode}-web`]: {
          image: IMAGE,
          command: ['sleep', '300'],
          net: 'none',
          environment: ['GREETING=hello there', ''],
          user: '65534',
          start_order: 3,
        },
        [`${mode}-probe`]: {
          action: 'exec',
          command: [`${mode}-web`, 'sh', '-c', 'echo "$GREETING"; id -u; echo oops >&2; exit 3'],
          exit_codes: [3],
          start_order: 4,
        },
      };
      const run = await runIn('docker-cmd', deployment(id, config), { env: hookEnv(t) });
      t.equal(run.code, 0, 'the hook exits 0', { stderr: run.stderr });
      t.equal(run.result.deploy_status_code, 0, 'exit status 3 of the exec is one of its exit_codes');
      t.match(
        run.result.deploy_stdout,
        /^first\n\nsecond\n\n[0-9a-f]{64}\n\nhello there\n65534\n$/,
        'outputs in start order (start_order, not key order), joined as upstream',
      );
      t.equal(run.result.deploy_stderr, 'oops\n');
      t.same(
        namesOf(id),
        [`${mode}-first`, `${mode}-second`, `${mode}-web`].sort(),
        'one container per run definition, named after it',
      );
      t.same(
        labelsOf(`${mode}-web`),
        {
          config_id: id,
          container_name: `${mode}-web`,
          deploy_resource_name: 'deployment',
          deploy_stack_id: 'stack/0001',
          managed_by: 'docker-cmd',
        },
        "upstream's labels",
      );
      t.equal(
        docker(
          'inspect',
          '--format',
          '{{.State.Running}} {{.HostConfig.NetworkMode}} {{.Config.User}}',
          `${mode}-web`,
        ).stdout.trim(),
        'true none 65534',
        'detached by default, with the options given',
      );
      t.match(run.stderr, /docker run --name .*-web/, 'the commands are logged');
      assertNoSecrets(t, run.stderr, 'the log');
      docker('rm', '-f', ...namesOf(id));
    },
  );

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(
    `${mode}: a replacing deployment takes a suffixed name; removal of the old one gives it back; DELETE removes the containers`,
    { skip },
    async (t) => {
      const env = hookEnv(t);
      const name = `${mode}-svc`;
      const config = { [name]: { image: IMAGE, command: 'sleep 300', net: 'none' } };
      const old = await runIn('docker-cmd', deployment(`old-${mode}`, config), { env });
      t.equal(old.result.deploy_status_code, 0, 'the first deployment runs', { stderr: old.stderr });
      const next = await runIn('docker-cmd', deployment(`new-${mode}`, config), { env });
      t.equal(next.result.deploy_status_code, 0, 'the replacing deployment runs', { stderr: next.stderr });
      const [suffixed] = namesOf(`new-${mode}`);
      t.match(suffixed, new RegExp(`^${name}-[a-z0-9]{8}$`), 'the name is still taken, so a suffixed one');

      const hook = (await loadBuiltinHook('docker-cmd'))!;
      const capture = captureLog();
      await runRemovalInProcess({ hook, id: `old-${mode}`, env, log: capture.log });
      t.same(namesOf(`old-${mode}`), [], "the old deployment's containers are removed");
      t.same(namesOf(`new-${mode}`), [name], 'the replacing container gets its own name back');

      const del = await runIn(
        'docker-cmd',
        deployment(`new-${mode}`, config, { inputs: [{ name: 'deploy_action', value: 'DELETE' }] }),
        { env },
      );
      t.same(del.result, { deploy_stdout: '', deploy_stderr: '', deploy_status_code: 0 }, 'DELETE succeeds', {
        stderr: del.stderr,
      });
      t.same(namesOf(`new-${mode}`), [], "DELETE removes the deployment's containers");
    },
  );

t.test(
  "removal leaves other deployments' and foreign containers alone, and fails (for the log) when the daemon is down",
  async (t) => {
    const env = hookEnv(t);
    const keep = await HOOK_MODES[0]!.run(
      'docker-cmd',
      deployment('keep', { 'keep-me': { image: IMAGE, command: 'sleep 300', net: 'none' } }),
      { env },
    );
    t.equal(keep.result.deploy_status_code, 0, { stderr: keep.stderr });
    docker('run', '-d', '--net=none', '--name', 'foreign', '--label', 'config_id=gone', IMAGE, 'sleep', '300');
    const hook = (await loadBuiltinHook('docker-cmd'))!;
    await runRemovalInProcess({ hook, id: 'gone', env, log: captureLog().log });
    t.same(namesOf('keep'), ['keep-me'], "another deployment's container stays");
    t.same(namesOf('gone'), ['foreign'], 'a container docker-cmd did not start stays, whatever its labels');
    await t.rejects(
      runRemovalInProcess({ hook, id: 'keep', env: { ...env, DOCKER_HOST: DEAD_SOCKET }, log: captureLog().log }),
      /cannot reach its daemon/,
    );
    docker('rm', '-f', 'foreign', 'keep-me');
  },
);

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(
    `${mode}: bad input and broken environments give a failure result naming the container and the cause`,
    { skip },
    async (t) => {
      const env = hookEnv(t);
      const failing = async (what: string, config: unknown, expected: RegExp, runEnv = env, options = {}) => {
        const id = `bad-${mode}`;
        const run = await runIn('docker-cmd', deployment(id, config, { options }), { env: runEnv });
        t.equal(run.code, 0, `${what}: the hook does not crash`, { stderr: run.stderr });
        t.not(run.result.deploy_status_code, 0, `${what}: a failure status`);
        t.match(run.result.deploy_stderr, expected, `${what}: deploy_stderr says why`);
        t.same(namesOf(id), [], `${what}: no container was started`);
      };
      const web = (extra: Record<string, unknown> = {}) => ({
        image: IMAGE,
        command: 'sleep 300',
        net: 'none',
        ...extra,
      });
      for (const hostile of ['--privileged', 'a/b', '$(touch /tmp/x)', 'x', '../etc', 'a b', '-']) {
        await failing(
          `name ${JSON.stringify(hostile)}`,
          { good: web(), [hostile]: web() },
          /not a valid container name/,
        );
      }
      await failing(
        'an unknown key',
        { good: web(), web: web({ ports: ['80:80'] }) },
        /container "web": unknown key "ports"/,
      );
      await failing(
        'an exec into an option',
        { good: web(), probe: { action: 'exec', command: ['--privileged', 'sh'] } },
        /container "probe": exec target "--privileged"/,
      );
      await failing(
        'an image that looks like an option',
        { web: { image: '--rm', command: 'sh' } },
        /container "web": a container to run needs an image/,
      );
      await failing(
        'a wrong type',
        { web: web({ environment: 'A=1' }) },
        /container "web": environment must be a list of strings/,
      );
      await failing(
        'a config that is not a mapping',
        '- just\n- words\n',
        /container 1 of the config list is not a mapping/,
      );
      await failing('YAML that does not parse', 'web: [', /not valid YAML/);
      await failing(
        'a daemon that is not running',
        { web: web() },
        /container "web": docker cannot reach its daemon .*unreachable for 0 seconds.*Start the docker service/,
        { ...env, DOCKER_HOST: DEAD_SOCKET },
        { daemon_timeout: 0 },
      );
      const noDocker = path.join(t.testdir(), 'bin');
      mkdirSync(noDocker);
      symlinkSync(process.execPath, path.join(noDocker, 'node'));
      await failing(
        'no docker binary',
        { web: web() },
        /docker is not installed: the command "docker" was not found.*HEAT_DOCKER_CMD/,
        { ...env, PATH: noDocker },
      );

      // Pulled from a registry on a closed loopback port: nothing leaves the machine.
      const missing = await runIn(
        'docker-cmd',
        deployment(`img-${mode}`, {
          [`${mode}-later`]: web({ start_order: 1 }),
          [`${mode}-ghost`]: { image: '127.0.0.1:1/ghost:1', net: 'none' },
        }),
        { env },
      );
      t.equal(missing.code, 0);
      t.equal(missing.result.deploy_status_code, 125, "docker run's status");
      t.match(
        missing.result.deploy_stderr,
        /docker: Error response from daemon: .*127\.0\.0\.1:1/,
        "deploy_stderr is what docker printed, as upstream's",
      );
      t.match(
        missing.stderr,
        new RegExp(`container failed container=${mode}-ghost .*exitCode=125 reason=docker: Error response from daemon`),
        'the log names the container and the cause',
      );
      t.same(namesOf(`img-${mode}`), [`${mode}-later`], 'the other containers still run, as upstream');
      docker('rm', '-f', ...namesOf(`img-${mode}`));
    },
  );

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: without docker, podman runs the containers (recording fake podman)`, { skip }, async (t) => {
    const dir = t.testdir();
    const bin = path.join(dir, 'bin');
    mkdirSync(bin);
    symlinkSync(process.execPath, path.join(bin, 'node'));
    symlinkSync(path.join(FAKE_TOOLS, 'podman'), path.join(bin, 'podman'));
    const record = path.join(dir, 'record.jsonl');
    const run = await runIn(
      'docker-cmd',
      deployment('pod', {
        web: {
          name: 'ignored',
          image: 'img',
          command: 'sleep 1',
          privileged: true,
          environment: ['API_TOKEN=tok-in-config'],
        },
      }),
      { env: { PATH: bin, FAKE_TOOL_RECORD: record } },
    );
    t.equal(run.result.deploy_status_code, 0, { stderr: run.stderr });
    t.match(run.stderr, /docker not found; using podman/, 'the log says podman stands in');
    t.match(run.stderr, /--env=API_TOKEN=\[REDACTED\]/, 'the logged command masks a secret-looking environment value');
    t.notMatch(run.stderr, /tok-in-config/);
    const calls = readRecords(record).map((r) => r.argv);
    t.same(
      calls.slice(0, 2),
      [
        ['inspect', '--format', 'exists', 'web'],
        [
          'run',
          '--name',
          'web',
          '--label',
          'deploy_stack_id=stack/0001',
          '--label',
          'deploy_resource_name=deployment',
          '--label',
          'config_id=pod',
          '--label',
          'container_name=web',
          '--label',
          'managed_by=docker-cmd',
          '--detach=true',
          '--env=API_TOKEN=tok-in-config',
          '--privileged=true',
          'img',
          'sleep',
          '1',
        ],
      ],
      "upstream's command lines, through podman (a name inside a definition is ignored, as upstream)",
    );
    const list = await runIn(
      'docker-cmd',
      deployment('pod', '- name: late\n  image: img\n  start_order: 1\n- name: early\n  image: img\n'),
      { env: { PATH: bin, FAKE_TOOL_RECORD: record } },
    );
    t.equal(list.result.deploy_status_code, 0, { stderr: list.stderr });
    t.same(
      readRecords(record)
        .slice(2)
        .filter((r) => r.argv[0] === 'run')
        .map((r) => r.argv[2]),
      ['early', 'late'],
      'the list form, as YAML text, in start order',
    );
    const explicit = await runIn('docker-cmd', deployment('pod', { web: { image: 'img' } }), {
      env: { PATH: bin, FAKE_TOOL_RECORD: record, HEAT_DOCKER_CMD: path.join(bin, 'podman') },
    });
    t.equal(explicit.result.deploy_status_code, 0);
    t.notMatch(explicit.stderr, /using podman/, 'HEAT_DOCKER_CMD is used as given');
  });

// As heat-agents' tests run it: the executable, given a deployment without an id (the agent's own always have one).
t.test(
  "any inspect failure leaves the name free, and deploy_stderr is only what the commands printed (a scripted fake docker answering as heat-agents' tests do)",
  async (t) => {
    const dir = t.testdir();
    const calls = path.join(dir, 'calls');
    const fake = path.join(dir, 'docker');
    // inspect: docker 24's message for a name nothing holds; run: prints on stderr and fails with status 2.
    writeFileSync(
      fake,
      `#!/bin/sh\necho "$*" >> ${calls}\ncase "$1" in\n` +
        `inspect) echo "Error: No such image, container or task: $4" >&2; exit 1 ;;\n` +
        `run) echo "Creating $3..." >&2; [ "$3" = bad ] && exit 2; exit 0 ;;\nesac\n`,
      { mode: 0o755 },
    );
    const config = { good: { image: 'img', start_order: 0 }, bad: { image: 'img', start_order: 1 } };
    const run = await runHook(
      'docker-cmd',
      { name: 'n', group: 'docker-cmd', config },
      {
        env: { PATH, HEAT_DOCKER_CMD: fake },
      },
    );
    t.equal(run.code, 0, 'a deployment without an id runs, as upstream', { stderr: run.stderr });
    t.same(run.result, {
      deploy_stdout: '',
      deploy_stderr: 'Creating good...\n\nCreating bad...\n',
      deploy_status_code: 2,
    });
    const lines = readFileSync(calls, 'utf8').trim().split('\n');
    t.same(
      lines.filter((l) => l.startsWith('inspect')),
      ['inspect --format exists good', 'inspect --format exists bad'],
      "upstream's inspect command, and no suffix: the names were free",
    );
    t.match(
      lines[1],
      /^run --name good .*--label config_id= --label container_name=good /,
      'config_id is empty without an id',
    );
    t.match(
      run.stderr,
      /container failed container=bad .*exitCode=2 reason=Creating bad\.\.\./,
      'the log names the failing container',
    );
  },
);
