import {
  chmodSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { Agent } from '../../src/daemon/agent.js';
import { AGENT_PID_ENV } from '../../src/daemon/agent-pid-env.js';
import { InstalledFilesWatch, runningBundle, startedBySystemd } from '../../src/daemon/self-upgrade.js';
import { agentDeps, makeAgentRoot } from '../helpers/agent-root.js';
import { until } from '../helpers/fault-daemon.js';
import { captureLog } from '../helpers/log-capture.js';

// An upgrade of the agent's own files under the running daemon (often by one of its deployments: apt-get upgrade in
// a script) is noticed between loop passes. Under systemd the loop ends by itself, as on SIGTERM, with exit 0, so
// Restart=always starts the new version; elsewhere one warning per change. A temporary file stands for the bundle,
// replaced the way dpkg replaces files (a new file renamed over the old one).

const RESTART_MSG = "the agent's files were upgraded; restarting to run the new version";
const WARN_MSG = "the agent's files were upgraded; restart it to run the new version";

/** Replaces `file` as dpkg does: the same or new contents in a new file, renamed over the old one (a new inode). */
function replaceAsDpkg(file: string, contents = readFileSync(file, 'utf8')): void {
  writeFileSync(`${file}.dpkg-new`, contents);
  renameSync(`${file}.dpkg-new`, file);
}

t.test(
  'the watch: unchanged, then a replaced bundle under systemd asks for a restart, with one info line',
  async (t) => {
    const dir = t.testdir({ 'os-config-agent.mjs': 'export {};\n' });
    const file = path.join(dir, 'os-config-agent.mjs');
    const captured = captureLog();
    const watch = await InstalledFilesWatch.start(file, true, captured.log);
    t.ok(watch, 'watching');
    t.equal(await watch?.check(), 'unchanged');
    t.equal(await watch?.check(), 'unchanged', 'nothing to say while nothing changes');
    replaceAsDpkg(file);
    t.equal(await watch?.check(), 'restart', 'same contents, new file: the reinstall case');
    const lines = captured.lines.filter((l) => l.msg === RESTART_MSG);
    t.equal(lines.length, 1);
    t.match(lines[0], {
      level: 'info',
      file,
      before: { inode: Number, size: 11, mtime: String },
      after: { inode: Number, size: 11 },
    });
    t.not(
      (lines[0]?.before as { inode: number }).inode,
      (lines[0]?.after as { inode: number }).inode,
      'the inodes differ',
    );
  },
);

t.test('the watch: contents rewritten in place (size, mtime) count as a change too', async (t) => {
  const dir = t.testdir({ 'b.mjs': 'export {};\n' });
  const file = path.join(dir, 'b.mjs');
  const watch = await InstalledFilesWatch.start(file, true, captureLog().log);
  utimesSync(file, new Date(2020, 0, 1), new Date(2020, 0, 1));
  t.equal(await watch?.check(), 'restart', 'mtime');
  const again = await InstalledFilesWatch.start(file, true, captureLog().log);
  writeFileSync(file, 'export const longer = 1;\n');
  utimesSync(file, new Date(2020, 0, 1), new Date(2020, 0, 1));
  t.equal(await again?.check(), 'restart', 'size');
});

t.test('the watch outside systemd: one warning per change, never a restart', async (t) => {
  const dir = t.testdir({ 'b.mjs': 'export {};\n' });
  const file = path.join(dir, 'b.mjs');
  const captured = captureLog();
  const watch = await InstalledFilesWatch.start(file, false, captured.log);
  replaceAsDpkg(file);
  t.equal(await watch?.check(), 'warned');
  t.equal(await watch?.check(), 'unchanged', 'the same change is not reported twice');
  t.equal(await watch?.check(), 'unchanged');
  replaceAsDpkg(file, 'export const v2 = 1;\n');
  t.equal(await watch?.check(), 'warned', 'a second upgrade is');
  const warnings = captured.lines.filter((l) => l.msg === WARN_MSG);
  t.equal(warnings.length, 2);
  t.match(warnings[0], { level: 'warn', file });
  t.equal(captured.lines.filter((l) => l.msg === RESTART_MSG).length, 0);
});

t.test(
  'the watch: off without a file or when it cannot be read; a bundle gone between passes is no change',
  async (t) => {
    const dir = t.testdir({ 'b.mjs': 'export {};\n' });
    const captured = captureLog();
    t.equal(await InstalledFilesWatch.start(undefined, true, captured.log), undefined, 'no file: off, silently');
    t.equal(captured.lines.length, 0);
    t.equal(
      await InstalledFilesWatch.start(path.join(dir, 'missing.mjs'), true, captured.log),
      undefined,
      'unreadable: off',
    );
    t.match(captured.lines, [{ level: 'warn', msg: /cannot read the agent's own bundle/ }]);
    const file = path.join(dir, 'b.mjs');
    const watch = await InstalledFilesWatch.start(file, true, captured.log);
    rmSync(file);
    t.equal(await watch?.check(), 'unchanged', 'removed: the running version goes on');
  },
);

t.test('runningBundle: the real path of a .mjs entry (through links); nothing for sources or bare names', async (t) => {
  const dir = t.testdir({ lib: { 'os-config-agent.mjs': 'export {};\n' }, 'bin.ts': '' });
  const real = path.join(dir, 'lib/os-config-agent.mjs');
  symlinkSync('os-config-agent.mjs', path.join(dir, 'lib/os-collect-config'));
  t.equal(runningBundle(real), real);
  t.equal(runningBundle(path.join(dir, 'lib/os-collect-config')), real, 'a compatibility name linked to the bundle');
  t.equal(runningBundle(path.join(dir, 'bin.ts')), undefined, 'sources');
  t.equal(runningBundle('os-collect-config'), undefined, 'the name a launcher sets');
  t.equal(runningBundle(undefined), undefined);
});

t.test('startedBySystemd: INVOCATION_ID or NOTIFY_SOCKET', async (t) => {
  t.ok(startedBySystemd({ INVOCATION_ID: 'a1b2' }));
  t.ok(startedBySystemd({ NOTIFY_SOCKET: '/run/systemd/notify' }));
  t.notOk(startedBySystemd({}));
  t.notOk(startedBySystemd({ INVOCATION_ID: '' }));
});

// The daemon loop, for real: a command pipeline whose command records the OS_CONFIG_AGENT_PID it inherited and, on
// its first run, replaces the "bundle" as an upgrade inside a deployment would.

function loopSetup(t: { testdir(): string }, oneTime = false) {
  const dir = t.testdir();
  const bundle = path.join(dir, 'lib/os-config-agent.mjs');
  mkdirSync(path.dirname(bundle), { recursive: true });
  writeFileSync(bundle, 'export {};\n');
  const record = path.join(dir, 'runs');
  const command = path.join(dir, 'upgrade.sh');
  writeFileSync(
    command,
    `#!/bin/sh\necho "pid=\${${AGENT_PID_ENV}:-unset}" >> '${record}'\nif [ ! -e '${dir}/upgraded' ]; then touch '${dir}/upgraded'; cp '${bundle}' '${bundle}.dpkg-new'; mv '${bundle}.dpkg-new' '${bundle}'; fi\n`,
  );
  chmodSync(command, 0o755);
  const root = makeAgentRoot(
    path.join(dir, 'root'),
    `[DEFAULT]\ncommand = ${command}\ncollectors = local\nmin_polling_interval = 600\npolling_interval = 600\n${oneTime ? 'one_time = true\n' : ''}[agent]\nwatch = false\npoll_jitter = 0\n`,
  );
  root.writeLocal('a', { v: 1 });
  const captured = captureLog();
  const events: string[] = [];
  const service = {
    ready: () => events.push('ready'),
    progress: () => undefined,
    stopping: () => events.push('stopping'),
    close: async () => void events.push('close'),
  };
  const deps = agentDeps(root, captured.log, { entryFile: bundle });
  const runs = () => (existsSync(record) ? readFileSync(record, 'utf8').trim().split('\n') : []);
  return { dir, bundle, root, captured, events, service, deps, runs };
}

t.test(
  'daemon loop under systemd: the pass that upgraded the agent ends the loop by itself, exit 0, STOPPING sent',
  async (t) => {
    const { captured, events, service, deps, runs, root } = loopSetup(t);
    t.equal(process.env[AGENT_PID_ENV], undefined, 'not set before the loop');
    const agent = await Agent.create(deps({ env: { INVOCATION_ID: '0123abcd' }, service }));
    const outer = new AbortController();
    // Bounded: a loop that does not end by itself is ended here, and the checks below then fail.
    const guard = setTimeout(() => outer.abort(), 20_000);
    t.teardown(() => clearTimeout(guard));
    const code = await agent.run(outer.signal);
    clearTimeout(guard);
    t.notOk(outer.signal.aborted, 'nobody sent SIGTERM: the loop ended by itself');
    t.equal(code, 0, 'exit 0, for Restart=always');
    t.same(runs(), [`pid=${process.pid}`], "the command ran once, and was told the agent's pid");
    t.equal(captured.lines.filter((l) => l.msg === RESTART_MSG).length, 1, 'one restart line');
    t.same(events, ['ready', 'stopping', 'close'], 'systemd is told the agent is stopping');
    const order = captured.lines.map((l) => l.msg);
    t.ok(order.indexOf('cycle complete; cache committed') < order.indexOf(RESTART_MSG), 'after the pass was committed');
    t.ok(order.indexOf(RESTART_MSG) < order.indexOf('stopped'));
    t.ok(
      existsSync(path.join(root.root, 'var/lib/os-collect-config/a.json.last')),
      'the pass that upgraded is committed: not run again after the restart',
    );
    t.equal(process.env[AGENT_PID_ENV], undefined, 'taken back when the loop ends');
  },
);

t.test(
  'daemon loop under systemd seen through its notifier alone (NOTIFY_SOCKET, taken from the environment)',
  async (t) => {
    const { events, service, deps, runs } = loopSetup(t);
    const agent = await Agent.create(deps({ env: {}, service }));
    const outer = new AbortController();
    const guard = setTimeout(() => outer.abort(), 20_000);
    t.teardown(() => clearTimeout(guard));
    t.equal(await agent.run(outer.signal), 0);
    clearTimeout(guard);
    t.notOk(outer.signal.aborted, 'ended by itself');
    t.equal(runs().length, 1);
    t.same(events, ['ready', 'stopping', 'close']);
  },
);

t.test('daemon loop outside systemd: the upgrade is warned about once and the loop goes on', async (t) => {
  const { captured, deps, runs, root, bundle } = loopSetup(t);
  const agent = await Agent.create(deps({ env: {} }));
  const outer = new AbortController();
  const running = agent.run(outer.signal);
  await until('the upgrade warning', () => captured.lines.some((l) => l.msg === WARN_MSG), 10_000);
  t.same(runs(), [`pid=${process.pid}`]);
  // Two more passes (a reload wakes the loop): no new warning for the same change.
  agent.requestReload();
  await until(
    'the first reload',
    () => captured.lines.filter((l) => l.msg === 'configuration reloaded').length === 1,
    10_000,
  );
  root.writeLocal('a', { v: 2 });
  agent.requestReload();
  await until('the second run', () => runs().length === 2, 10_000);
  await until(
    'the second cycle',
    () =>
      captured.lines.filter((l) => l.msg === 'configuration reloaded').length === 2 &&
      captured.lines.filter((l) => l.msg === 'cycle complete; cache committed').length === 2,
    10_000,
  );
  t.equal(captured.lines.filter((l) => l.msg === WARN_MSG).length, 1, 'still one warning');
  // Another upgrade: warned again at the next pass.
  replaceAsDpkg(bundle, 'export const v3 = 1;\n');
  agent.requestReload();
  await until('the second warning', () => captured.lines.filter((l) => l.msg === WARN_MSG).length === 2, 10_000);
  t.equal(captured.lines.filter((l) => l.msg === RESTART_MSG).length, 0, 'never a restart');
  outer.abort();
  t.equal(await running, 0);
  t.equal(process.env[AGENT_PID_ENV], undefined);
});

t.test('one-time runs neither export OS_CONFIG_AGENT_PID nor check for upgrades', async (t) => {
  const { captured, deps, runs } = loopSetup(t, true);
  const agent = await Agent.create(deps({ env: { INVOCATION_ID: '0123abcd' } }));
  t.equal(await agent.run(new AbortController().signal), 0);
  t.same(runs(), ['pid=unset']);
  t.equal(captured.lines.filter((l) => l.msg === RESTART_MSG || l.msg === WARN_MSG).length, 0);
});
