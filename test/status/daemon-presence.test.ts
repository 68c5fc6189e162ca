import { spawn } from 'node:child_process';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { claimDaemon, DaemonRunningError, runningDaemon } from '../../src/status/daemon-presence.js';
import { bootId, processStartTicks } from '../../src/util/process-identity.js';
import { holdFlock } from '../helpers/flock-holder.js';

// daemon.pid: the daemon holds it locked for its life; readers find it by pid, start time and boot id. A line naming
// a dead process, a pid now used by another process, the last boot, or garbage, means no daemon.

t.test('claimed, found, withdrawn; claiming twice in one process shares the claim', async (t) => {
  const file = path.join(t.testdir(), 'state/daemon.pid');
  t.equal(await runningDaemon(file), undefined, 'no file: no daemon');
  const withdraw = await claimDaemon(file);
  t.equal(statSync(file).mode & 0o777, 0o600);
  t.equal(readFileSync(file, 'utf8'), `${process.pid} ${processStartTicks(process.pid)} ${bootId()}\n`);
  t.equal(await runningDaemon(file), process.pid);
  const again = await claimDaemon(file);
  await again();
  t.equal(await runningDaemon(file), process.pid, 'still claimed while the first claim holds');
  await withdraw();
  await withdraw();
  t.equal(readFileSync(file, 'utf8'), '', 'emptied, never removed');
  t.equal(await runningDaemon(file), undefined);
});

t.test('a dead pid, a reused pid, another boot, garbage: no daemon', async (t) => {
  const file = path.join(t.testdir(), 'daemon.pid');
  const child = spawn('sleep', ['30'], { stdio: 'ignore' });
  t.teardown(() => child.kill('SIGKILL'));
  const ticks = processStartTicks(child.pid!);
  writeFileSync(file, `${child.pid} ${ticks}\n`);
  t.equal(await runningDaemon(file), child.pid, 'live (a line without a boot id, as older agents wrote)');
  writeFileSync(file, `${child.pid} ${ticks} ${bootId()}\n`);
  t.equal(await runningDaemon(file), child.pid, 'live, this boot');
  writeFileSync(file, `${child.pid} ${ticks} 00000000-0000-0000-0000-000000000000\n`);
  t.equal(await runningDaemon(file), undefined, 'same pid and start time in another boot: another process');
  writeFileSync(file, `${child.pid} 1\n`);
  t.equal(await runningDaemon(file), undefined, 'same pid, other start time: another process');
  writeFileSync(file, `${child.pid} ${ticks}\n`);
  child.kill('SIGKILL');
  await new Promise((resolve) => child.once('exit', resolve));
  t.equal(await runningDaemon(file), undefined, 'dead');
  for (const junk of ['', 'abc', '-1 5', '0 1', `${process.pid}`, `${process.pid} 1 2 3`]) {
    writeFileSync(file, junk);
    t.equal(await runningDaemon(file), undefined, JSON.stringify(junk));
  }
});

t.test('another process holding the claim: refused, naming it', async (t) => {
  const file = path.join(t.testdir(), 'daemon.pid');
  writeFileSync(file, '', { mode: 0o600 });
  const holder = await holdFlock(file, { named: true });
  t.teardown(() => holder.kill());
  const err = await claimDaemon(file).catch((e: unknown) => e);
  t.ok(err instanceof DaemonRunningError);
  t.match(err, {
    code: 'ERR_LOCKED',
    message: new RegExp(`another os-config-agent daemon runs on this root \\(process ${holder.pid}\\)`),
  });
  t.equal((err as DaemonRunningError).holder?.pid, holder.pid);
  await holder.kill();
  const withdraw = await claimDaemon(file);
  t.equal(await runningDaemon(file), process.pid, 'the killed daemon left nothing in the way');
  await withdraw();
});

t.test('a line left by a killed daemon whose pid now runs something else does not block a new daemon', async (t) => {
  const file = path.join(t.testdir(), 'daemon.pid');
  const other = spawn('sleep', ['30'], { stdio: 'ignore' });
  t.teardown(() => other.kill('SIGKILL'));
  // The line a daemon killed by SIGKILL leaves behind, its pid since reused by a live process.
  writeFileSync(file, `${other.pid} ${processStartTicks(other.pid!)} ${bootId()}\n`);
  const withdraw = await claimDaemon(file);
  t.equal(await runningDaemon(file), process.pid);
  await withdraw();
});
