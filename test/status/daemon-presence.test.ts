import { spawn } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { announceDaemon, runningDaemon } from '../../src/status/daemon-presence.js';
import { processStartTicks } from '../../src/util/process-identity.js';

// daemon.pid: a live daemon is found by pid and start time; a file naming a dead process, or a pid now used by
// another process, or garbage, means no daemon.

t.test('announced, found, withdrawn', async (t) => {
  const file = path.join(t.testdir(), 'state/daemon.pid');
  t.equal(await runningDaemon(file), undefined, 'no file: no daemon');
  const withdraw = await announceDaemon(file);
  t.equal(statSync(file).mode & 0o777, 0o600);
  t.equal(await runningDaemon(file), process.pid);
  await withdraw();
  t.notOk(existsSync(file));
});

t.test("a dead pid, a reused pid, garbage: no daemon; withdrawing leaves another daemon's line", async (t) => {
  const file = path.join(t.testdir(), 'daemon.pid');
  const child = spawn('sleep', ['30'], { stdio: 'ignore' });
  t.teardown(() => child.kill('SIGKILL'));
  const ticks = processStartTicks(child.pid!);
  writeFileSync(file, `${child.pid} ${ticks}\n`);
  t.equal(await runningDaemon(file), child.pid, 'live');
  writeFileSync(file, `${child.pid} 1\n`);
  t.equal(await runningDaemon(file), undefined, 'same pid, other start time: another process');
  writeFileSync(file, `${child.pid} ${ticks}\n`);
  child.kill('SIGKILL');
  await new Promise((resolve) => child.once('exit', resolve));
  t.equal(await runningDaemon(file), undefined, 'dead');
  for (const junk of ['', 'abc', '-1 5', '0 1', `${process.pid}`]) {
    writeFileSync(file, junk);
    t.equal(await runningDaemon(file), undefined, JSON.stringify(junk));
  }
  const withdraw = await announceDaemon(file);
  writeFileSync(file, '12345 678\n');
  await withdraw();
  t.equal(readFileSync(file, 'utf8'), '12345 678\n', 'not ours: left alone');
});
