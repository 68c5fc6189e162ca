import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { isSameProcess, killOrphanHook, processStartTicks } from '../../src/util/process-identity.js';
import { requireBundle } from '../helpers/bundle.js';
import { deployment } from '../helpers/deploy-fixtures.js';

// Ending a hook's process group left behind by an agent that died alone, recognised by pid and start time.

function gone(pid: number, ticks: string): boolean {
  if (!isSameProcess(pid, ticks)) return true;
  return readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z ');
}

async function waitFor(what: string, cond: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

t.test('processStartTicks reads /proc; isSameProcess needs the same start time', async (t) => {
  const mine = processStartTicks(process.pid);
  t.match(mine, /^\d+$/, 'a number of clock ticks');
  t.ok(isSameProcess(process.pid, mine!));
  t.notOk(isSameProcess(process.pid, `${Number(mine) + 1}`), 'another start time is another process');
  t.equal(processStartTicks(2 ** 22 + 12345), undefined, 'no such process');
});

t.test('killOrphanHook ends the whole group of a recorded process, and nothing else', async (t) => {
  const dir = t.testdir();
  const childPid = path.join(dir, 'child.pid');
  const leader = spawn('/bin/sh', ['-c', `sleep 60 & echo $! > ${childPid}; wait`], {
    detached: true,
    stdio: 'ignore',
  });
  leader.unref();
  await waitFor('the group to start', () => existsSync(childPid) && readFileSync(childPid, 'utf8').trim() !== '');
  const pid = leader.pid!;
  const ticks = processStartTicks(pid)!;
  const grandchild = Number(readFileSync(childPid, 'utf8'));
  const grandTicks = processStartTicks(grandchild)!;
  t.teardown(() => {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // gone
    }
  });

  t.notOk(await killOrphanHook(pid, `${Number(ticks) + 1}`), 'a pid whose start time differs is left alone');
  t.ok(isSameProcess(pid, ticks), 'still running');
  t.notOk(await killOrphanHook(2 ** 22 + 12345, '1'), 'a pid that does not exist: nothing to do');

  t.ok(await killOrphanHook(pid, ticks), 'the recorded process was found and killed');
  await waitFor('the leader to go', () => gone(pid, ticks));
  await waitFor('the grandchild to go', () => gone(grandchild, grandTicks));
  t.pass('leader and grandchild are gone');
});

t.test(
  'an agent killed alone leaves its hook running; the next run ends it before running the deployment again',
  async (t) => {
    const root = t.testdir();
    const hooks = path.join(root, 'var/lib/heat-config/hooks');
    mkdirSync(hooks, { recursive: true });
    const mark = path.join(root, 'first-run');
    const pidFile = path.join(root, 'hook.pid');
    // First run: records its pid and hangs (with a child in its group). Later runs: finish at once.
    writeFileSync(
      path.join(hooks, 'orphan'),
      `#!/bin/sh\ncat > /dev/null\nif [ ! -e ${mark} ]; then touch ${mark}; sleep 600 & echo "$$ $!" > ${pidFile}; wait; fi\necho '{"deploy_stdout":"second run"}'\n`,
    );
    chmodSync(path.join(hooks, 'orphan'), 0o755);
    const list = path.join(root, 'heat-config.json');
    writeFileSync(list, JSON.stringify([deployment({ id: 'orphan-1', group: 'orphan' })]));
    const env = { ...process.env };
    delete env.NODE_OPTIONS;
    const args = [requireBundle(), 'deploy', '--root', root, '--heat-config', '/heat-config.json'];

    const first = spawn(process.execPath, args, { env, stdio: 'ignore' });
    await waitFor('the hook to start', () => existsSync(pidFile) && readFileSync(pidFile, 'utf8').includes(' '));
    const [hookPid, sleepPid] = readFileSync(pidFile, 'utf8').trim().split(' ').map(Number) as [number, number];
    const hookTicks = processStartTicks(hookPid)!;
    const sleepTicks = processStartTicks(sleepPid)!;
    t.teardown(() => {
      try {
        process.kill(-hookPid, 'SIGKILL');
      } catch {
        // gone
      }
    });
    await waitFor('the pid in the record', () => {
      const file = path.join(root, 'var/lib/os-config-agent/deployments/orphan-1.json');
      return existsSync(file) && (JSON.parse(readFileSync(file, 'utf8')) as { hookPid?: number }).hookPid === hookPid;
    });
    first.kill('SIGKILL');
    await new Promise((r) => first.once('exit', r));
    t.ok(isSameProcess(hookPid, hookTicks), 'the hook outlived the agent (its own process group)');

    const second = spawnSync(process.execPath, args, { env, encoding: 'utf8', timeout: 60_000 });
    t.equal(second.status, 0, 'the second run completes', { stderr: second.stderr });
    t.ok(gone(hookPid, hookTicks), 'the orphaned hook was killed');
    t.ok(gone(sleepPid, sleepTicks), 'so was the rest of its process group');
    t.match(second.stderr, /hook left running by an earlier agent; its process group was killed/);
    const record = JSON.parse(
      readFileSync(path.join(root, 'var/lib/os-config-agent/deployments/orphan-1.json'), 'utf8'),
    ) as { state: string; hookStarts: number };
    t.equal(record.state, 'done');
    t.equal(record.hookStarts, 2, 'run once more, as after any crash');
  },
);
