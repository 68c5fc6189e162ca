import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import t, { type Test } from 'tap';
import { systemdNotifySender, takeNotifyEnvironment } from '../../src/daemon/sd-notify.js';
import { createServiceNotifier } from '../../src/daemon/service-notifier.js';
import { captureLog } from '../helpers/log-capture.js';

// The notify protocol end to end: the real systemd-notify sends to a unix datagram socket, received by a small Python
// stand-in for systemd (Node can receive no datagrams), which prints what arrived.

const haveTools =
  spawnSync('systemd-notify', ['--version']).status === 0 && spawnSync('python3', ['-c', '1']).status === 0;
const RECEIVER = path.join(import.meta.dirname, '../fixtures/sd-notify/receiver.py');

async function startReceiver(t: Test) {
  const dir = mkdtempSync(path.join(tmpdir(), 'oca-notify-'));
  const socketPath = path.join(dir, 'notify');
  const proc = spawn('python3', [RECEIVER, socketPath], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.teardown(() => {
    proc.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
  const lines = createInterface({ input: proc.stdout })[Symbol.asyncIterator]();
  const first = await lines.next();
  if (first.value !== 'listening') throw new Error('the receiver did not start');
  let barriers = 0;
  // systemd-notify follows each message with BARRIER=1 (and a pipe it waits on): counted, not returned.
  const next = async (): Promise<string> => {
    for (;;) {
      const line = String((await lines.next()).value);
      if (line !== 'BARRIER=1') return line;
      barriers++;
    }
  };
  return { socketPath, next, barriers: () => barriers };
}

t.test('the environment is taken: values read, then removed so deployments do not inherit them', async (t) => {
  const env: NodeJS.ProcessEnv = {
    NOTIFY_SOCKET: '/run/systemd/notify',
    WATCHDOG_USEC: '120000000',
    WATCHDOG_PID: '42',
    PATH: '/bin',
  };
  t.same(takeNotifyEnvironment(env, 42), { socket: '/run/systemd/notify', watchdogMs: 120_000 });
  t.same(env, { PATH: '/bin' });
  t.same(
    takeNotifyEnvironment({ NOTIFY_SOCKET: '@x', WATCHDOG_USEC: '5000000', WATCHDOG_PID: '7' }, 42),
    { socket: '@x' },
    'the watchdog of another pid is not ours',
  );
  t.same(takeNotifyEnvironment({ NOTIFY_SOCKET: '@x', WATCHDOG_USEC: 'nonsense' }, 42), { socket: '@x' });
  t.equal(takeNotifyEnvironment({ WATCHDOG_USEC: '5000000' }, 42), undefined, 'no socket: nothing at all');
  t.equal(createServiceNotifier(captureLog().log, {}), undefined);
});

t.test(
  'systemd-notify delivers READY, WATCHDOG and STOPPING in order',
  { skip: !haveTools && 'systemd-notify or python3 is not installed' },
  async (t) => {
    const receiver = await startReceiver(t);
    const send = systemdNotifySender(receiver.socketPath, captureLog().log);
    void send('READY=1');
    void send('WATCHDOG=1');
    await send('STOPPING=1');
    const got = [await receiver.next(), await receiver.next(), await receiver.next()];
    t.same(got, ['READY=1', 'WATCHDOG=1', 'STOPPING=1']);
    t.ok(
      receiver.barriers() >= 2,
      'each send waited for the receiver (the barrier), so none is lost when the sender exits',
    );
  },
);

t.test(
  'the service notifier: ready once, the watchdog fed at half its period from then, stopping last',
  { skip: !haveTools && 'systemd-notify or python3 is not installed' },
  async (t) => {
    const receiver = await startReceiver(t);
    const cap = captureLog();
    const service = createServiceNotifier(cap.log, { NOTIFY_SOCKET: receiver.socketPath, WATCHDOG_USEC: '400000' })!;
    service.progress(60_000, 60_000);
    service.ready();
    service.ready();
    t.equal(await receiver.next(), 'READY=1');
    t.equal(await receiver.next(), 'WATCHDOG=1');
    t.equal(await receiver.next(), 'WATCHDOG=1');
    service.stopping();
    await service.close();
    // After any feed already on its way, STOPPING comes; no READY twice.
    let line = await receiver.next();
    while (line === 'WATCHDOG=1') line = await receiver.next();
    t.equal(line, 'STOPPING=1');
    t.equal(cap.lines.find((l) => l.msg === 'systemd notification enabled')?.watchdogSeconds, 0.4);
  },
);

t.test('no systemd-notify: one warning per message kind, nothing thrown', async (t) => {
  const cap = captureLog();
  const send = systemdNotifySender('/nonexistent/notify', cap.log, '/nonexistent/systemd-notify');
  await send('WATCHDOG=1');
  await send('WATCHDOG=1');
  await send('READY=1');
  t.same(
    cap.lines.map((l) => [l.msg, l.notification]),
    [
      ['could not notify systemd; is systemd-notify installed?', 'WATCHDOG'],
      ['could not notify systemd; is systemd-notify installed?', 'READY'],
    ],
  );
});
