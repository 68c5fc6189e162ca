import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { Agent } from '../../src/daemon/agent.js';
import { agentStatusPath, type AgentFacts } from '../../src/status/agent-facts.js';
import { agentDeps, makeAgentRoot, recordingCommand } from '../helpers/agent-root.js';
import { pidAlive, until } from '../helpers/fault-daemon.js';
import { captureLog } from '../helpers/log-capture.js';
import { scrubText } from '../../src/log/redact.js';

// The daemon's error paths an operator meets: a cache that cannot be written (full or read-only disk), a command
// still running at shutdown, a failing boot-resume check or signal-queue service, and bad local data (nested too
// deep, the same cache key from two sources). In each the daemon stays up, keeps the last good state, says what
// happened in one log line, and recovers by itself once the cause is gone.

function runs(file: string): string[] {
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
}

/** `until` with this file's 15 s default. */
const waitFor = (what: string, cond: () => boolean, ms = 15_000) => until(what, cond, ms);

function setup(t: { testdir(): string }, config: (command: string, dir: string) => string) {
  const dir = t.testdir();
  const cmd = recordingCommand(dir);
  const root = makeAgentRoot(path.join(dir, 'root'), config(cmd.command, dir));
  const captured = captureLog();
  const deps = agentDeps(root, captured.log, { strictExit: false });
  const logged = (msg: string) => captured.lines.filter((l) => l.msg === msg);
  return { dir, cmd, root, captured, deps, logged };
}

t.test(
  'a cache directory that cannot be created: the loop logs each failed cycle, stays up, and recovers once it can write',
  async (t) => {
    // The cache directory's parent is a regular file: mkdir fails with ENOTDIR, as on a broken or read-only disk.
    const { dir, cmd, root, deps, logged } = setup(
      t,
      (command) =>
        `[DEFAULT]\ncommand = ${command}\ncollectors = local\ncachedir = /blocked/cache\nmin_polling_interval = 0.05\npolling_interval = 0.05\n[agent]\nwatch = false\npoll_jitter = 0\n`,
    );
    const blocker = path.join(dir, 'root/blocked');
    writeFileSync(blocker, 'not a directory');
    root.writeLocal('a', { v: 1 });
    const agent = await Agent.create(deps());
    const controller = new AbortController();
    t.teardown(() => controller.abort());
    const running = agent.run(controller.signal);
    const status = agentStatusPath(agent.loaded.paths);
    const facts = () => (existsSync(status) ? (JSON.parse(readFileSync(status, 'utf8')) as AgentFacts) : undefined);

    await waitFor('two failed cycles', () => logged('cycle failed unexpectedly; nothing committed').length >= 2);
    const line = logged('cycle failed unexpectedly; nothing committed')[0];
    t.equal(line?.code, 'ERR_CACHE_WRITE', 'the line carries the stable code');
    t.match(
      String((line?.err as { message?: string } | undefined)?.message),
      /cannot create cache directory .*blocked\/cache: ENOTDIR; check the path/,
      'and says what to check',
    );
    t.equal(runs(cmd.record).length, 0, 'the command never ran on uncached data');
    await waitFor('the status file reports the failed cycle', () => facts()?.lastCycle?.result === 'failed');
    t.equal(facts()?.lastCycle?.exitCode, 1);

    // The operator frees the path: the next poll writes the cache, runs the command and commits.
    rmSync(blocker);
    mkdirSync(blocker, { mode: 0o700 });
    await waitFor('the command ran after recovery', () => runs(cmd.record).length === 1);
    await waitFor('the cache committed', () => existsSync(path.join(blocker, 'cache/a.json.last')));
    await waitFor('the status file reports the applied cycle', () => facts()?.lastCycle?.result === 'applied');
    controller.abort();
    t.equal(await running, 0, 'a clean stop');
  },
);

t.test('a one-time run whose cache cannot be written exits 1 and says so', async (t) => {
  const { dir, cmd, root, deps, logged } = setup(
    t,
    (command) =>
      `[DEFAULT]\ncommand = ${command}\ncollectors = local\ncachedir = /blocked/cache\none_time = true\n[agent]\nwatch = false\n`,
  );
  writeFileSync(path.join(dir, 'root/blocked'), 'not a directory');
  root.writeLocal('a', { v: 1 });
  const agent = await Agent.create(deps());
  t.equal(await agent.run(new AbortController().signal), 1);
  t.equal(logged('cycle failed; nothing committed')[0]?.code, 'ERR_CACHE_WRITE');
  t.equal(runs(cmd.record).length, 0);
});

t.test(
  'the list of cache files cannot be written: nothing is run or committed, and the next cycle tries again',
  async (t) => {
    const { cmd, root, deps, logged } = setup(
      t,
      (command) => `[DEFAULT]\ncommand = ${command}\ncollectors = local\n[agent]\nwatch = false\n`,
    );
    const cache = path.join(root.root, 'var/lib/os-collect-config');
    // A non-empty directory where os_config_files.json goes: the atomic rename onto it fails.
    mkdirSync(path.join(cache, 'os_config_files.json/x'), { recursive: true });
    root.writeLocal('a', { v: 1 });
    const agent = await Agent.create(deps());
    const signal = new AbortController().signal;
    const failed = await agent.cycle(signal);
    t.equal(failed.exitCode, 1);
    t.equal(failed.ran, false);
    t.same(failed.changedKeys, ['a']);
    t.equal(logged('cache write failed; nothing run or committed')[0]?.code, 'ERR_CACHE_WRITE');
    t.equal(runs(cmd.record).length, 0, 'the command did not run');
    t.notOk(existsSync(path.join(cache, 'a.json.last')), 'nothing committed');

    rmSync(path.join(cache, 'os_config_files.json'), { recursive: true });
    const retried = await agent.cycle(signal);
    t.equal(retried.exitCode, 0);
    t.same(retried.changedKeys, ['a'], 'the same change is still pending');
    t.equal(runs(cmd.record).length, 1);
    t.ok(existsSync(path.join(cache, 'a.json.last')));
  },
);

t.test('shutdown while the command runs: its whole process group is stopped and nothing is committed', async (t) => {
  const { dir, root, deps, logged } = setup(t, () => '');
  // The command starts a grandchild and waits for it, as os-refresh-config waits for a phase script.
  const pids = path.join(dir, 'pids');
  const script = path.join(dir, 'slow.sh');
  writeFileSync(script, `#!/bin/sh\nsleep 300 &\necho "$$ $!" > '${pids}'\nwait\n`, { mode: 0o755 });
  root.writeConfig(`[DEFAULT]\ncommand = ${script}\ncollectors = local\n[agent]\nwatch = false\n`);
  root.writeLocal('a', { v: 1 });
  const agent = await Agent.create(deps());
  const controller = new AbortController();
  const running = agent.run(controller.signal);
  await waitFor(
    'the command and its child started',
    () => existsSync(pids) && readFileSync(pids, 'utf8').includes(' '),
  );
  const [shell, sleeper] = readFileSync(pids, 'utf8').trim().split(' ').map(Number) as [number, number];
  t.ok(pidAlive(sleeper), 'the grandchild runs');
  controller.abort();
  t.equal(await running, 0, 'the daemon stops cleanly');
  await waitFor('the process group is gone', () => !pidAlive(shell) && !pidAlive(sleeper), 10_000);
  t.pass('the command and its grandchild were stopped');
  t.match(logged('pipeline failed; new data not committed')[0], {
    code: 'ERR_COMMAND_FAILED',
    reason: /killed by SIGTERM/,
  });
  t.notOk(
    existsSync(path.join(root.root, 'var/lib/os-collect-config/a.json.last')),
    'nothing committed: the next start runs it again',
  );
});

t.test('a failing boot-resume check is a warning; the cycle still runs', async (t) => {
  const { cmd, root, deps, logged } = setup(
    t,
    (command) =>
      `[DEFAULT]\ncommand = ${command}\ncollectors = local\none_time = true\n[agent]\nwatch = false\nnative_pipeline = true\n`,
  );
  root.writeLocal('a', { v: 1 });
  const agent = await Agent.create(
    deps({
      mode: 'run',
      resumeAfterBoot: () => Promise.reject(new Error('cannot read /proc/sys/kernel/random/boot_id: EACCES')),
    }),
  );
  t.equal(await agent.run(new AbortController().signal), 0);
  t.match(logged('could not check for deployments waiting for this boot')[0], {
    level: 'warn',
    reason: /boot_id: EACCES/,
  });
  t.equal(runs(cmd.record).length, 1, 'the cycle ran (run mode without a native pipeline falls back to the command)');
});

t.test('a signal-queue service that fails is logged; the poll loop goes on and stops cleanly', async (t) => {
  const { cmd, root, deps, logged } = setup(
    t,
    (command) =>
      `[DEFAULT]\ncommand = ${command}\ncollectors = local\nmin_polling_interval = 0.05\npolling_interval = 0.05\n[agent]\nwatch = false\npoll_jitter = 0\n`,
  );
  root.writeLocal('a', { v: 1 });
  const agent = await Agent.create(
    deps({ signalQueue: () => Promise.reject(new Error('cannot open the queue directory: EIO')) }),
  );
  const controller = new AbortController();
  t.teardown(() => controller.abort());
  const running = agent.run(controller.signal);
  await waitFor(
    'the failure is logged',
    () => logged('signal queue stopped; queued signals wait for the next start').length === 1,
  );
  t.match(logged('signal queue stopped; queued signals wait for the next start')[0], { level: 'error', reason: /EIO/ });
  await waitFor('the loop ran a cycle', () => runs(cmd.record).length === 1);
  root.writeLocal('a', { v: 2 });
  await waitFor('and keeps polling', () => runs(cmd.record).length === 2);
  controller.abort();
  t.equal(await running, 0);
});

t.test(
  'a value nested deeper than the limit is refused by itself and reported: its last good value and the rest are kept',
  async (t) => {
    const { cmd, root, deps, logged } = setup(
      t,
      (command) => `[DEFAULT]\ncommand = ${command}\ncollectors = local\n[agent]\nwatch = false\n`,
    );
    root.writeLocal('a', { v: 1, x: 'good' });
    const agent = await Agent.create(deps());
    const signal = new AbortController().signal;
    t.equal((await agent.cycle(signal)).exitCode, 0);
    // 600 levels: valid JSON, but deep enough to overflow a recursive merge or render.
    root.writeLocal('a', `{"v": 2, "x": ${'{"x":'.repeat(600)}1${'}'.repeat(600)}}`);
    const report = await agent.cycle(signal);
    t.match(
      report.failures,
      [{ collector: 'local', code: 'ERR_SOURCE_INVALID_DATA', message: /"a\.x" is nested deeper than 512 levels/ }],
      'the source is reported with the refused key',
    );
    t.same(report.changedKeys, ['a'], 'and the rest of its data is used');
    t.match(
      (await agent.cycle(signal)).failures,
      [{ collector: 'local', code: 'ERR_SOURCE_INVALID_DATA' }],
      'the same bytes at the next poll: reported again (an unchanged source is reused only when nothing was refused)',
    );
    t.match(logged('source unavailable'), [
      { level: 'warn', code: 'ERR_SOURCE_INVALID_DATA', collector: 'local', reason: /"a\.x"/ },
    ]);
    t.same(JSON.parse(readFileSync(path.join(root.root, 'var/lib/os-collect-config/a.json'), 'utf8')), {
      v: 2,
      x: 'good',
    });
    t.equal(runs(cmd.record).length, 2);
    // A document that is too deep as a whole keeps its last good value.
    root.writeLocal('a', `${'['.repeat(600)}${']'.repeat(600)}`);
    t.same((await agent.cycle(signal)).changedKeys, []);
    t.same(JSON.parse(readFileSync(path.join(root.root, 'var/lib/os-collect-config/a.json'), 'utf8')), {
      v: 2,
      x: 'good',
    });
  },
);

t.test(
  'two sources producing the same cache key: the later one wins, with one warning (upstream looped forever, B6)',
  async (t) => {
    const { dir, cmd, root, deps, logged } = setup(t, () => '');
    const second = path.join(dir, 'root/srv/more-data');
    mkdirSync(second, { recursive: true, mode: 0o700 });
    root.writeConfig(
      `[DEFAULT]\ncommand = ${cmd.command}\ncollectors = local\n[local]\npath = /var/lib/os-collect-config/local-data\npath = /srv/more-data\n[agent]\nwatch = false\n`,
    );
    root.writeLocal('same', { from: 'first' });
    writeFileSync(path.join(second, 'same'), JSON.stringify({ from: 'second' }), { mode: 0o600 });
    const agent = await Agent.create(deps());
    const report = await agent.cycle(new AbortController().signal);
    t.equal(report.exitCode, 0);
    t.same(report.changedKeys, ['same'], 'one key');
    t.same(
      JSON.parse(readFileSync(path.join(root.root, 'var/lib/os-collect-config/same.json'), 'utf8')),
      { from: 'second' },
      'the later source wins',
    );
    t.equal(logged('two sources produced the same cache key; the later one wins').length, 1);
    t.equal(runs(cmd.record).length, 1, 'the command ran once');
  },
);

t.test(
  'a command that rewrites the configuration file: the loop reloads it in-process before the next poll (upstream re-executed)',
  async (t) => {
    const { dir, root, deps, logged } = setup(t, () => '');
    const script = path.join(dir, 'rewrite.sh');
    const ran = path.join(dir, 'ran');
    // As upstream's os-apply-config template for os-collect-config.conf did: the command writes the agent's own file.
    const next = `[DEFAULT]\\ncommand = ${script}\\ncollectors = local\\nmin_polling_interval = 600\\npolling_interval = 600\\n[agent]\\nwatch = false\\npoll_jitter = 0.5\\n`;
    writeFileSync(script, `#!/bin/sh\necho run >> '${ran}'\nprintf '${next}' > '${root.configFile}'\n`, {
      mode: 0o755,
    });
    root.writeConfig(
      `[DEFAULT]\ncommand = ${script}\ncollectors = local\nmin_polling_interval = 600\npolling_interval = 600\n[agent]\nwatch = false\npoll_jitter = 0\n`,
    );
    root.writeLocal('a', { v: 1 });
    const agent = await Agent.create(deps());
    t.equal(agent.loaded.config.agent.poll_jitter, 0);
    const controller = new AbortController();
    t.teardown(() => controller.abort());
    const running = agent.run(controller.signal);
    await waitFor('the configuration was reloaded', () => logged('configuration reloaded').length === 1);
    t.equal(agent.loaded.config.agent.poll_jitter, 0.5, 'the new file is in force, without a restart');
    t.equal(runs(ran).length, 1, 'the command ran once: the reload itself changes no metadata');
    controller.abort();
    t.equal(await running, 0);
  },
);

t.test(
  'a reload that cannot read the configuration file keeps the configuration in force, secrets still scrubbed',
  async (t) => {
    const { dir, root, deps, logged } = setup(t, () => '');
    const script = path.join(dir, 'remove.sh');
    const ran = path.join(dir, 'ran');
    // A config manager replacing the file in two steps: the command run ends between the two.
    writeFileSync(script, `#!/bin/sh\necho run >> '${ran}'\nrm -f '${root.configFile}'\n`, { mode: 0o755 });
    const secretKey = 'kept-secret-Xq7vL2';
    root.writeConfig(
      `[DEFAULT]\ncommand = ${script}\ncollectors = local\nmin_polling_interval = 600\npolling_interval = 600\n[agent]\nwatch = false\npoll_jitter = 0\n[cfn]\nsecret_access_key = ${secretKey}\n`,
    );
    root.writeLocal('a', { v: 1 });
    const agent = await Agent.create(deps());
    const controller = new AbortController();
    t.teardown(() => controller.abort());
    const running = agent.run(controller.signal);
    await waitFor(
      'the reload was refused',
      () => logged('configuration reload failed; keeping the previous configuration').length === 1,
    );
    const refused = logged('configuration reload failed; keeping the previous configuration')[0];
    t.same(refused?.files, ['/etc/os-collect-config.conf'], 'the file is named as the operator knows it');
    t.equal(refused?.reason, 'a config file could not be read');
    t.equal(refused?.code, 'ERR_CONFIG_UNREADABLE');
    t.equal(logged('configuration reloaded').length, 0);
    t.equal(agent.loaded.config.DEFAULT.command, script, 'the command in force is still the one configured');
    t.equal(agent.loaded.config.DEFAULT.polling_interval, 600, 'not the default polling interval');
    t.equal(agent.loaded.config.cfn.secret_access_key, secretKey);
    t.notMatch(
      scrubText(`signing with ${secretKey}`),
      secretKey,
      'the secret of the configuration in force is still scrubbed',
    );
    controller.abort();
    t.equal(await running, 0);
  },
);
