import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { makeAgentRoot } from '../helpers/agent-root.js';
import { runBundle } from '../helpers/bundle.js';
import { killTree, startDaemon, stopDaemon, until, type Daemon } from '../helpers/fault-daemon.js';
import { startWaitConditionServer, type WaitConditionServer } from '../helpers/wait-condition-server.js';

// The daemon delivers what `cfn-signal` queued: the real bundle as `run` under --root, one daemon per phase of one
// instance root, a server that checks requests as heat-api-cfn does. Each signal must reach Heat exactly once: from a
// running daemon, after an outage, and after the daemon was killed with the signal still queued.

const CONFIG = `[DEFAULT]
collectors = local
polling_interval = 600
min_polling_interval = 600
[agent]
watch = false
[deploy]
signal_max_backoff = 1
signal_timeout = 5
`;

let server: WaitConditionServer;
t.before(async () => {
  server = await startWaitConditionServer();
});
t.teardown(() => server.close());

const root = makeAgentRoot(path.join(t.testdirName, 'instance'), CONFIG).root;
const pidFile = path.join(root, 'var/lib/os-config-agent/daemon.pid');
const queueDir = path.join(root, 'var/lib/os-config-agent/signals');

function entries(): Array<Record<string, unknown>> {
  if (!existsSync(queueDir)) return [];
  return readdirSync(queueDir)
    .filter((n) => n.endsWith('.json'))
    .map((n) => JSON.parse(readFileSync(path.join(queueDir, n), 'utf8')) as Record<string, unknown>);
}

const acceptedFor = (id: string) =>
  server.requests.filter((r) => r.status === 200 && r.raw.includes(`"UniqueId": "${id}"`)).length;
/** The queue file of a signal, found by its UniqueId while it is pending (a settled file keeps no body). */
const fileOf = (uniqueId: string) =>
  String(entries().find((e) => (e.text as string | undefined)?.includes(`"UniqueId": "${uniqueId}"`))?.id);
const stateOf = (fileId: string) => entries().find((e) => e.id === fileId)?.state;

async function daemonUp(): Promise<Daemon> {
  const d = startDaemon(root);
  await until(
    'the daemon says it runs',
    () => existsSync(pidFile) && readFileSync(pidFile, 'utf8').startsWith(`${d.pid} `),
    30_000,
  );
  return d;
}

function secretsIn(text: string): string[] {
  const found: string[] = [];
  if (/Signature=(?!%5BREDACTED|\[REDACTED)[A-Za-z0-9%+/]{6}/.test(text)) found.push('Signature');
  if (text.includes(server.token)) found.push('token');
  return found;
}

const everything: string[] = [];

t.test('a running daemon delivers a queued signal once; the command returns at once (exit 0)', async (t) => {
  const d = await daemonUp();
  t.teardown(() => stopDaemon(d));
  const res = await runBundle(['cfn-signal', '--root', root, '-i', 'live', server.cfnUrl('wc_live')]);
  everything.push(res.stderr);
  t.equal(res.code, 0, 'queued, the daemon runs');
  t.equal(res.stderr, '', 'nothing to say');
  await until('delivered', () => acceptedFor('live') === 1, 30_000);
  await until('settled on disk', () => entries().some((e) => e.state === 'sent' && e.attempts === 1), 30_000);
  // The line is written after the file: wait for it rather than race it.
  await until(
    'the daemon logged the delivery',
    () => d.lines.some((l) => l.msg === 'queued signal sent' && l.component === 'signal-queue'),
    30_000,
  );
  t.equal(acceptedFor('live'), 1, 'exactly once');

  // Native handle, same daemon.
  const native = await runBundle([
    'cfn-signal',
    '--root',
    root,
    '--token',
    server.token,
    '--body',
    '{"status": "SUCCESS", "id": "n1"}',
    server.nativeUrl('wc_live_native'),
  ]);
  everything.push(native.stderr);
  t.equal(native.code, 0);
  await until('native delivered', () => server.handles.get('wc_live_native')?.has('n1') === true, 30_000);

  // Server down: the daemon retries with backoff and delivers once it is back.
  await server.stop();
  const down = await runBundle(['cfn-signal', '--root', root, '-i', 'outage', server.cfnUrl('wc_outage')]);
  everything.push(down.stderr);
  t.equal(down.code, 0, 'queued; the daemon will retry');
  const outage = fileOf('outage');
  await until(
    'the daemon failed at least twice',
    () => d.lines.filter((l) => l.msg === 'queued signal attempt failed; will retry').length >= 2,
    30_000,
  );
  await server.start();
  await until('delivered after the outage', () => stateOf(outage) === 'sent', 30_000);
  t.equal(acceptedFor('outage'), 1, 'once after the outage');
  await stopDaemon(d);
  t.equal(readFileSync(pidFile, 'utf8'), '', 'daemon.pid emptied at a clean stop');
  everything.push(...d.raw);
});

t.test('daemon killed with the signal still queued: delivered once after the restart', async (t) => {
  const d = await daemonUp();
  await server.stop();
  let up = false;
  t.teardown(async () => {
    if (!up) await server.start();
  });
  const queued = await runBundle(['cfn-signal', '--root', root, '-i', 'crash', server.cfnUrl('wc_crash')]);
  everything.push(queued.stderr);
  t.equal(queued.code, 0);
  const crash = fileOf('crash');
  await until(
    'the daemon tried once',
    () => d.lines.some((l) => l.msg === 'queued signal attempt failed; will retry'),
    30_000,
  );
  await killTree(d);
  everything.push(...d.raw);
  t.not(readFileSync(pidFile, 'utf8'), '', 'a SIGKILL leaves its line in daemon.pid behind');

  // No daemon now (the pid file names a dead process): the command says so, keeps the signal, exits 3.
  const orphan = await runBundle(['cfn-signal', '--root', root, '-i', 'while-down', server.cfnUrl('wc_crash')]);
  everything.push(orphan.stderr);
  t.equal(orphan.code, 3);
  t.match(orphan.stderr, /no os-config-agent daemon is running, so it is sent when the agent starts/);
  const whileDown = fileOf('while-down');

  await server.start();
  up = true;
  t.equal(acceptedFor('crash'), 0, 'nothing delivered while the daemon was dead');
  const again = await daemonUp();
  t.teardown(() => stopDaemon(again));
  await until(
    'both delivered after the restart',
    () => stateOf(crash) === 'sent' && stateOf(whileDown) === 'sent',
    30_000,
  );
  t.equal(acceptedFor('crash'), 1, 'the signal queued before the crash: once');
  t.equal(acceptedFor('while-down'), 1, 'the signal queued while down: once');
  await stopDaemon(again);
  everything.push(...again.raw);
});

t.test('no secret in any log line or message', async (t) => {
  const text = everything.join('\n');
  t.ok(text.includes('queued signal sent'), 'the logs were collected');
  t.same(secretsIn(text), []);
  for (const e of entries())
    t.notOk('url' in e || 'token' in e || 'text' in e, `${String(e.id)}: settled, holds no credential`);
});
