import t from 'tap';
import { LoopWatchdog } from '../../src/daemon/watchdog.js';
import { runScript } from '../../src/refresh/run-script.js';
import { writeScript } from '../refresh/phase-fixtures.js';
import path from 'node:path';
import type { TapTest } from '../helpers/http-test-server.js';

// In-process deadlines under a stepped wall clock (Date.now faked a year ahead or behind): the systemd watchdog's
// promise and os-refresh-config's script timeout are timed on the monotonic clock, so a step neither fires them early
// (systemd restarting a healthy agent, a script killed at once) nor stretches them (a stalled loop never noticed).

const YEAR = 365 * 86_400_000;

/** Date.now replaced by the real clock plus an offset the test steps (installed before the code under test reads it). */
function wallClock(t: TapTest): { step(by: number): void } {
  const real = Date.now;
  let offset = 0;
  Date.now = () => real() + offset;
  t.teardown(() => {
    Date.now = real;
  });
  return { step: (by) => void (offset += by) };
}

t.test('watchdog: the clock steps a year ahead while the loop sleeps within its promise: still healthy', async (t) => {
  const clock = wallClock(t);
  const watchdog = new LoopWatchdog({ intervalMs: 1000, feed: () => undefined });
  watchdog.progress(60_000, 1000);
  clock.step(YEAR);
  t.ok(watchdog.healthy(), 'a forward step is not a stall');
});

t.test('watchdog: the clock steps a year back: a loop past its promise is still a stall', async (t) => {
  const clock = wallClock(t);
  const watchdog = new LoopWatchdog({ intervalMs: 1000, feed: () => undefined });
  watchdog.progress(5, 5);
  clock.step(-YEAR);
  // At least 20 ms pass on every clock that does not step: the 5 ms promise is broken.
  await new Promise((resolve) => setTimeout(resolve, 20));
  t.notOk(watchdog.healthy(), 'a backward step does not hide the stall');
});

t.test('os-refresh-config script timeout: a forward step does not kill the script early', async (t) => {
  const dir = t.testdir({});
  writeScript(path.join(dir, 's'), '#!/bin/sh\nsleep 0.2\nexit 0\n');
  const deadline = performance.now() + 60_000;
  wallClock(t).step(YEAR);
  const r = await runScript({
    file: path.join(dir, 's'),
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    deadline,
    output: 'ignore',
  });
  t.equal(r.timedOut, false);
  t.equal(r.exitCode, 0);
});
