import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { requireBundle } from '../helpers/bundle.js';
import { makeAgentRoot, recordingCommand } from '../helpers/agent-root.js';
import { repeatedKeys } from '../helpers/log-capture.js';

// The daemon as systemd runs it: a real process, JSON log lines on stdout, SIGHUP reloads, SIGTERM exits 0.

interface Daemon {
  pid: number;
  lines: Array<Record<string, unknown>>;
  waitForLine(pred: (l: Record<string, unknown>) => boolean, ms?: number): Promise<Record<string, unknown>>;
  kill(sig: NodeJS.Signals): void;
  exit: Promise<number | null>;
}

function startDaemon(args: string[]): Daemon {
  const child = spawn(process.execPath, [requireBundle(), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: Array<Record<string, unknown>> = [];
  let buf = '';
  const waiters: Array<() => void> = [];
  child.stdout.on('data', (chunk: Buffer) => {
    buf += chunk.toString();
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (!line.trim()) continue;
      lines.push(JSON.parse(line) as Record<string, unknown>);
      const twice = repeatedKeys(line);
      if (twice.length > 0) lines.push({ msg: 'KEY TWICE', keys: twice, line });
    }
    for (const w of waiters.splice(0)) w();
  });
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    pid: child.pid!,
    lines,
    kill: (sig) => child.kill(sig),
    exit,
    async waitForLine(pred, ms = 10_000) {
      const deadline = Date.now() + ms;
      for (;;) {
        const found = lines.find(pred);
        if (found) return found;
        if (Date.now() > deadline) {
          child.kill('SIGKILL');
          throw new Error(`log line not seen; got: ${lines.map((l) => l.msg).join(' | ')}`);
        }
        await new Promise<void>((r) => {
          waiters.push(r);
          setTimeout(r, 50);
        });
      }
    },
  };
}

t.test('run: logs JSON to stdout, reloads on SIGHUP, exits 0 on SIGTERM', async (t) => {
  const dir = t.testdir();
  const cmd = recordingCommand(dir);
  const root = makeAgentRoot(
    path.join(dir, 'root'),
    `[DEFAULT]\ncommand = ${cmd.command}\ncollectors = local\npolling_interval = 600\nmin_polling_interval = 600\n[agent]\nnative_pipeline = false\nwatch = false\n`,
  );
  root.writeLocal('a', { v: 1 });
  const d = startDaemon(['run', '--root', root.root]);
  await d.waitForLine((l) => l.msg === 'agent starting');
  await d.waitForLine((l) => l.msg === 'cycle complete; cache committed');
  t.ok(existsSync(cmd.record), 'the command ran');

  // Upstream ignored SIGHUP after its first command run (B2): here it reloads at any time.
  root.writeConfig(
    `[DEFAULT]\ncommand = ${cmd.command}\ncollectors = local\ncollectors = heat_local\npolling_interval = 600\nmin_polling_interval = 600\n[agent]\nnative_pipeline = false\nwatch = false\n`,
  );
  d.kill('SIGHUP');
  await d.waitForLine((l) => l.msg === 'configuration reloaded');
  d.kill('SIGTERM');
  t.equal(await d.exit, 0, 'SIGTERM is a clean exit');
  t.ok(d.lines.some((l) => l.msg === 'stopped'));
  for (const l of d.lines) {
    t.type(l.msg, 'string');
    t.type(l.time, 'string');
  }
  t.equal(readFileSync(cmd.record, 'utf8').trim().split('\n').length, 1, 'one run: nothing changed after the reload');
});

t.test(
  'a second run daemon on one root refuses to start, naming the first; a killed first leaves no obstacle',
  async (t) => {
    const dir = t.testdir();
    const root = makeAgentRoot(
      path.join(dir, 'root'),
      '[DEFAULT]\ncollectors = local\npolling_interval = 600\nmin_polling_interval = 600\n[agent]\nnative_pipeline = false\nwatch = false\n',
    );
    root.writeLocal('a', { v: 1 });
    const first = startDaemon(['run', '--root', root.root]);
    t.teardown(() => first.kill('SIGKILL'));
    await first.waitForLine((l) => l.msg === 'agent starting');
    const second = spawnSync(process.execPath, [requireBundle(), 'run', '--root', root.root], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    t.equal(second.status, 1, 'refused');
    t.match(second.stderr, new RegExp(`another os-config-agent daemon runs on this root \\(process ${first.pid}\\)`));
    t.notMatch(second.stdout, /agent starting/, 'it never started its loop');
    first.kill('SIGKILL');
    await first.exit;
    const third = startDaemon(['run', '--root', root.root]);
    t.teardown(() => third.kill('SIGKILL'));
    await third.waitForLine((l) => l.msg === 'agent starting');
    third.kill('SIGTERM');
    t.equal(await third.exit, 0);
  },
);

t.test('run --one-time exits with the failing command status', async (t) => {
  const dir = t.testdir();
  const cmd = recordingCommand(dir);
  const root = makeAgentRoot(
    path.join(dir, 'root'),
    `[DEFAULT]\ncommand = ${cmd.command}\ncollectors = local\n[agent]\nnative_pipeline = false\n`,
  );
  root.writeLocal('a', { v: 1 });
  const { writeFileSync } = await import('node:fs');
  writeFileSync(cmd.exitFile, '4');
  const d = startDaemon(['run', '--root', root.root, '--one-time']);
  t.equal(await d.exit, 4);
  t.ok(d.lines.some((l) => l.msg === 'pipeline failed; new data not committed' && l.exitCode === 4));
});

t.test(
  'run, native pipeline: no log line carries a key twice (phases, apply, deployments all log under the pipeline)',
  async (t) => {
    const dir = t.testdir();
    const root = makeAgentRoot(path.join(dir, 'root'), '[DEFAULT]\ncollectors = local\n[agent]\nwatch = false\n');
    const { mkdirSync, writeFileSync } = await import('node:fs');
    const phase = path.join(root.root, 'usr/libexec/os-refresh-config/configure.d');
    mkdirSync(phase, { recursive: true });
    writeFileSync(path.join(phase, '10-user'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
    root.writeLocal('a', { v: 1, deployments: [] });
    const d = startDaemon(['run', '--root', root.root, '--one-time', '--log-level', 'debug']);
    t.equal(await d.exit, 0);
    t.ok(
      d.lines.some((l) => l.msg === 'script finished'),
      'the phases logged',
    );
    t.same(
      d.lines.filter((l) => l.msg === 'KEY TWICE'),
      [],
      'no key twice in any line',
    );
    t.ok(
      d.lines.filter((l) => l.msg === 'script finished').every((l) => l.component === 'pipeline'),
      'phase lines: one component',
    );
  },
);

t.test('a steady condition is logged when it starts and when it ends, not at every poll', async (t) => {
  const dir = t.testdir();
  const root = makeAgentRoot(
    path.join(dir, 'root'),
    '[DEFAULT]\ncollectors = local\ncommand = /bin/true\npolling_interval = 1\nmin_polling_interval = 1\n[agent]\nnative_pipeline = false\nwatch = false\npoll_jitter = 0\n',
  );
  const d = startDaemon(['run', '--root', root.root, '--log-level', 'debug']);
  t.teardown(() => d.kill('SIGKILL'));
  const polls = () =>
    d.lines.filter((l) => l.msg === 'no changes detected' || l.msg === 'cycle complete; cache committed').length;
  // Four polls of an empty local-data directory (bounded: waitForLine gives up after 10 s each).
  for (let n = 1; n <= 4; n++) await d.waitForLine(() => polls() >= n, 10_000);
  t.equal(d.lines.filter((l) => l.msg === 'no local metadata found').length, 1, 'once, when it started');
  root.writeLocal('a', { v: 1 });
  await d.waitForLine((l) => l.msg === 'local metadata found', 10_000);
  d.kill('SIGTERM');
  t.equal(await d.exit, 0);
  t.equal(d.lines.filter((l) => l.msg === 'local metadata found').length, 1, 'once, when it ended');
  t.equal(d.lines.filter((l) => l.msg === 'no local metadata found').length, 1);
});
