import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { runDeployments } from '../../../src/deploy/dispatch.js';
import { storeFor } from '../../../src/state/store.js';
import { REPO } from '../../helpers/bundle.js';
import { pidAlive, sleep, until } from '../../helpers/fault-daemon.js';
import { deployHarness, deployment, HOOKS_DIR } from '../../helpers/deploy-fixtures.js';
import type { TapTest } from '../../helpers/http-test-server.js';
import { startSignalSink } from '../../helpers/signal-sink.js';
import { FAKE_TOOLS, readRecords } from '../hook-process.js';

// The dispatcher runs the agent's own build of a hook inside itself, and anything else as a process: recognition from
// the file, the option that turns it off, and in-process faults (a hook that throws, hangs, floods, is stopped by a
// shutdown), each with one signal naming the cause and the next deployment still running.

const BUILT = path.join(REPO, 'dist/hooks');
const SYSTEM_PATH = `${path.dirname(process.execPath)}:/usr/local/bin:/usr/bin:/bin`;

function installBuilt(root: string, group: string, as = group, edit?: (text: string) => string): string {
  const dir = path.join(root, HOOKS_DIR);
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, as);
  if (edit) writeFileSync(file, edit(readFileSync(path.join(BUILT, group), 'utf8')));
  else copyFileSync(path.join(BUILT, group), file);
  chmodSync(file, 0o755);
  return file;
}

/** The built docker-cmd hook, and podman (the recording fake) as the only tool on PATH. */
function withDockerCmd(root: string): { bin: string; record: string; env: Record<string, string> } {
  installBuilt(root, 'docker-cmd');
  const bin = path.join(root, 'bin');
  mkdirSync(bin);
  symlinkSync(process.execPath, path.join(bin, 'node'));
  symlinkSync(path.join(FAKE_TOOLS, 'podman'), path.join(bin, 'podman'));
  const record = path.join(root, 'record.jsonl');
  return { bin, record, env: { PATH: bin, HOME: root, FAKE_TOOL_RECORD: record } };
}

async function setup(t: TapTest, cli: Parameters<typeof deployHarness>[1] = {}) {
  const root = t.testdir();
  const sink = await startSignalSink();
  t.teardown(() => sink.close());
  const h = await deployHarness(root, cli);
  const env = { PATH: SYSTEM_PATH, HOME: root };
  const dep = (id: string, config: unknown, extra: Parameters<typeof deployment>[0] = {}) =>
    deployment({ id, name: id, group: 'script', config, signal: sink.inputs('CFN_SIGNAL', id, id), ...extra });
  const body = (id: string) => sink.received.find((r) => r.id === id)?.body as Record<string, unknown>;
  const inProcess = (id: string) =>
    h.captured.lines.find((l) => l.msg === 'hook finished' && l.deploymentId === id)?.inProcess;
  const store = storeFor(h.loaded.config, h.captured.log);
  return { root, sink, h, env, dep, body, inProcess, store };
}

t.test(
  "recognised from the file: the agent's own build runs in-process; an edited, foreign or misplaced one as a process",
  async (t) => {
    const cases: Array<{
      title: string;
      install: (root: string) => void;
      cli?: Parameters<typeof deployHarness>[1];
      inProcess: boolean;
    }> = [
      { title: 'the built hook', install: (root) => installBuilt(root, 'script'), inProcess: true },
      {
        title: 'forced out of process',
        install: (root) => installBuilt(root, 'script'),
        cli: { deploy: { hooks_in_process: false } },
        inProcess: false,
      },
      {
        title: 'one byte edited after the stamp',
        install: (root) => installBuilt(root, 'script', 'script', (s) => s.replace('running tool', 'running tooL')),
        inProcess: false,
      },
      {
        title: 'from another release',
        install: (root) =>
          installBuilt(root, 'script', 'script', (s) => s.replace(/ version=\S+ /, ' version=0.0.0-other ')),
        inProcess: false,
      },
      {
        title: "the script hook installed under another group's name",
        install: (root) => installBuilt(root, 'script', 'puppet'),
        inProcess: false,
      },
    ];
    for (const c of cases) {
      await t.test(c.title, async (t) => {
        const { root, h, env, dep, body, inProcess } = await setup(t, c.cli);
        c.install(root);
        const group = c.title.includes('another group') ? 'puppet' : 'script';
        await runDeployments(h.ctx([dep('d1', '#!/bin/sh\necho "ran $deploy_action"\n', { group })], { env }));
        t.equal(inProcess('d1'), c.inProcess, c.inProcess ? 'in-process' : 'as a process');
        t.same(
          body('d1'),
          { deploy_stdout: 'ran CREATE\n', deploy_stderr: '', deploy_status_code: 0 },
          'the same answer either way',
        );
      });
    }
  },
);

t.test("a user's own hook under a built-in group's name runs as a process, exactly as before", async (t) => {
  const { root, h, env, dep, body, inProcess } = await setup(t);
  const file = path.join(root, HOOKS_DIR, 'script');
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, '#!/bin/sh\ncat > /dev/null\necho \'{"deploy_stdout": "mine", "deploy_status_code": 0}\'\n');
  chmodSync(file, 0o755);
  await runDeployments(h.ctx([dep('d1', '#!/bin/sh\necho never\n')], { env }));
  t.equal(inProcess('d1'), false);
  t.same(body('d1'), { deploy_stdout: 'mine', deploy_status_code: 0 });
});

t.test(
  'in-process faults: a hook that throws, a hung tool, a flood, a killed tool; one signal each, the next still runs',
  async (t) => {
    const { root, sink, h, env, dep, body, inProcess } = await setup(t, { deploy: { hook_timeout: 1 } });
    installBuilt(root, 'script');
    // The script hook writes <working>/<id>; a directory in its place makes the hook itself fail (EISDIR).
    mkdirSync(path.join(root, 'var/lib/heat-config/heat-config-script/throws'), { recursive: true });
    const grandchild = path.join(root, 'grandchild.pid');
    const list = [
      dep('throws', '#!/bin/sh\necho never\n'),
      dep('hangs', `#!/bin/sh\n(sleep 60 & echo $! > ${grandchild}; wait) &\nsleep 60\n`),
      // Its own timeout: 20 MB through tr can take longer than the others' 1 s on a loaded machine (it then ended 124).
      dep('floods', '#!/bin/sh\nhead -c 20000000 /dev/zero | tr "\\\\0" x\necho END-OF-OUTPUT\nexit 2\n', {
        options: { hook_timeout: 120 },
      }),
      dep('killed', '#!/bin/sh\nkill -SEGV $$\n'),
      dep('fine', '#!/bin/sh\necho fine\n'),
    ];
    const report = await runDeployments(h.ctx(list, { env }));
    t.same(report.ran, ['throws', 'hangs', 'floods', 'killed', 'fine']);
    t.same(
      report.failed.map((f) => f.id),
      ['throws', 'hangs', 'floods', 'killed'],
    );
    t.ok(
      list.every((d) => inProcess(d.id) === true),
      'all ran in-process',
    );
    t.same(
      sink.received.map((r) => r.id),
      ['throws', 'hangs', 'floods', 'killed', 'fine'],
      'one signal each, in order',
    );

    t.equal(body('throws').deploy_status_code, 1);
    t.match(body('throws').deploy_stderr, /^the script hook failed: EISDIR/);
    t.ok(
      h.captured.lines.some((l) => l.msg === 'hook crashed' && l.level === 'error' && l.group === 'script'),
      "the crash is in the agent's log",
    );

    t.equal(body('hangs').deploy_status_code, 124);
    t.match(body('hangs').deploy_stderr, /did not finish within 1 s; its process group was killed/);
    const gpid = Number(readFileSync(grandchild, 'utf8'));
    await until('the grandchild gone', () => !pidAlive(gpid), 5000).catch(() => undefined);
    t.notOk(pidAlive(gpid), "the tool's whole process group was killed");

    t.equal(body('floods').deploy_status_code, 2);
    t.match(String(body('floods').deploy_stdout), /END-OF-OUTPUT\n$/, 'the tail of the output is kept');
    t.ok(Buffer.byteLength(JSON.stringify(body('floods'))) <= 950_000, "the signal fits Heat's limit");

    t.equal(body('killed').deploy_status_code, 139);
    t.match(body('killed').deploy_stderr, /killed by SIGSEGV/);
    t.same(body('fine'), { deploy_stdout: 'fine\n', deploy_stderr: '', deploy_status_code: 0 });

    await runDeployments(h.ctx(list, { env }));
    t.equal(sink.received.length, 5, 'nothing run or signalled twice');
  },
);

t.test(
  "the tool's pid is recorded while it runs; a shutdown stops it and leaves the deployment to run again",
  async (t) => {
    const { root, h, env, dep, store } = await setup(t);
    installBuilt(root, 'script');
    const marker = path.join(root, 'started');
    const controller = new AbortController();
    const watching = (async () => {
      await until('the tool started', () => existsSync(marker), 10_000);
      // The record is saved with the pid as soon as the tool exists; the tool may have touched its marker first.
      let running = await store.read('slow');
      for (let i = 0; i < 250 && running?.hookPid === undefined; i++) {
        await sleep(20);
        running = await store.read('slow');
      }
      controller.abort();
      return running;
    })();
    const d = dep('slow', `#!/bin/sh\ntouch ${marker}\nsleep 30\n`);
    const report = await runDeployments(h.ctx([d], { env, signal: controller.signal }));
    const running = await watching;
    t.ok(report.interrupted);
    t.equal(running?.state, 'running');
    t.ok(
      running?.hookPid !== undefined && running.hookPidStart !== undefined,
      "the tool's pid and start time are in the record",
    );
    await until('the tool gone', () => !pidAlive(running!.hookPid!), 5000).catch(() => undefined);
    t.notOk(pidAlive(running!.hookPid!), 'the shutdown killed the tool');
    t.equal((await store.read('slow'))?.state, 'running', 'left to run again');
    const again = await runDeployments(h.ctx([{ ...d, config: '#!/bin/sh\necho second\n' }], { env }));
    t.same(again.ran, ['slow']);
    t.equal((await store.read('slow'))?.hookStarts, 2);
  },
);

t.test('work files are kept while the deployment exists and removed when it leaves the metadata', async (t) => {
  const { root, h, env, dep } = await setup(t);
  installBuilt(root, 'script');
  const working = path.join(root, 'var/lib/heat-config/heat-config-script');
  const a = dep('keep-a', '#!/bin/sh\necho a\n');
  const b = dep('keep-b', '#!/bin/sh\necho b\n');
  await runDeployments(h.ctx([a, b], { env }));
  t.same(readdirSync(working).sort(), ['keep-a', 'keep-b'], 'both scripts kept, as upstream keeps them');
  t.equal(statSync(path.join(working, 'keep-a')).mode & 0o777, 0o700);
  t.equal(statSync(working).mode & 0o777, 0o700);
  await runDeployments(h.ctx([a], { env }));
  t.same(readdirSync(working), ['keep-a'], "the removed deployment's script is gone");
});

t.test(
  "a hook's removal runs once its deployment leaves the metadata; a failing one is logged and the pass goes on (docker-cmd, recording fake podman)",
  async (t) => {
    const { root, h, dep } = await setup(t);
    const { record, env } = withDockerCmd(root);
    const a = dep('ctr-a', { web: { image: 'img' } }, { group: 'docker-cmd' });
    const b = dep('ctr-b', { db: { image: 'img' } }, { group: 'docker-cmd' });
    const first = await runDeployments(h.ctx([a, b], { env }));
    t.same(first.ran, ['ctr-a', 'ctr-b']);
    const before = readRecords(record).length;

    const second = await runDeployments(h.ctx([b], { env }));
    t.same(second.removed, ['ctr-a']);
    t.same(
      readRecords(record)
        .slice(before)
        .map((r) => r.argv.slice(0, 6)),
      [
        ['ps', '-q', '-a', '--filter', 'label=managed_by=docker-cmd', '--filter'],
        ['ps', '-a', '--filter', 'label=managed_by=docker-cmd', '--format', '{{.Names}} {{.Label "container_name"}}'],
      ],
      'the containers of the deployment are looked up (to be removed), then names restored',
    );
    t.equal(readRecords(record)[before]?.argv[6], 'label=config_id=ctr-a', 'by its config_id');
    t.ok(h.captured.lines.some((l) => l.msg === 'hook removal done' && l.deploymentId === 'ctr-a'));

    const third = await runDeployments(
      h.ctx([], { env: { ...env, HEAT_DOCKER_CMD: path.join(root, 'no-such-docker') } }),
    );
    t.same(third.removed, ['ctr-b'], 'the deployment is recorded as removed all the same');
    const warning = h.captured.lines.find((l) => l.msg === 'hook removal failed' && l.deploymentId === 'ctr-b');
    t.match(
      warning?.reason,
      /docker is not installed: the command ".*no-such-docker" was not found/,
      'the failure is logged with its cause',
    );
    const fourth = await runDeployments(h.ctx([], { env }));
    t.same(fourth.removed, [], 'a removal is attempted once');
  },
);

t.test(
  'a removal cut short by a shutdown leaves the record as it was, and the next start removes it (docker-cmd, recording fake podman)',
  async (t) => {
    const { root, h, dep, store } = await setup(t);
    const { bin, record, env } = withDockerCmd(root);
    const a = dep('ctr-a', { web: { image: 'img' } }, { group: 'docker-cmd' });
    t.same((await runDeployments(h.ctx([a], { env }))).ran, ['ctr-a']);

    // A docker that hangs while the containers are looked up, as a daemon busy at shutdown does.
    const hanging = path.join(root, 'hanging-docker');
    const marker = path.join(root, 'docker-started');
    writeFileSync(hanging, `#!/bin/sh\ntouch ${marker}\nexec sleep 30\n`, { mode: 0o755 });
    const controller = new AbortController();
    const stopping = until('docker started', () => existsSync(marker), 10_000).then(() => controller.abort());
    const cut = await runDeployments(
      h.ctx([], { env: { ...env, PATH: `${bin}:/bin:/usr/bin`, HEAT_DOCKER_CMD: hanging }, signal: controller.signal }),
    );
    await stopping;
    t.ok(cut.interrupted, 'the pass says it was interrupted');
    t.same(cut.removed, [], 'nothing recorded as removed');
    t.equal((await store.read('ctr-a'))?.state, 'signalled', 'the record is as it was');
    t.ok(
      h.captured.lines.some(
        (l) =>
          l.msg === 'hook removal interrupted by shutdown; it runs again at the next start' &&
          l.deploymentId === 'ctr-a',
      ),
    );
    t.notOk(
      h.captured.lines.some(
        (l) => (l.msg === 'hook removal done' || l.msg === 'hook removal failed') && l.deploymentId === 'ctr-a',
      ),
    );

    const before = readRecords(record).length;
    const next = await runDeployments(h.ctx([], { env }));
    t.same(next.removed, ['ctr-a'], 'the next start removes it');
    t.equal(
      readRecords(record)[before]?.argv[6],
      'label=config_id=ctr-a',
      'its containers are looked up for removal again',
    );
    t.equal((await store.read('ctr-a'))?.state, 'removed');
  },
);
