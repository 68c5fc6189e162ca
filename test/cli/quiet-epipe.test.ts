import { spawn } from 'node:child_process';
import { chmodSync, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { endQuietlyOnEpipe, printData } from '../../src/cli/quiet-epipe.js';
import { requireBundle } from '../helpers/bundle.js';

t.test(
  'EPIPE on stdout (a reader such as `head` went away) exits with the exit code so far; other errors are not swallowed',
  async (t) => {
    const before = process.stdout.listeners('error');
    endQuietlyOnEpipe();
    const added = process.stdout.listeners('error').filter((l) => !before.includes(l));
    t.equal(added.length, 1, 'one listener');
    t.teardown(() => {
      for (const l of added) process.stdout.off('error', l as (err: Error) => void);
    });
    const exits: Array<number | string | null | undefined> = [];
    const realExit = process.exit;
    const savedCode = process.exitCode;
    process.exit = ((code?: number | string | null) => {
      exits.push(code);
    }) as typeof process.exit;
    t.teardown(() => {
      process.exit = realExit;
      process.exitCode = savedCode;
    });
    const listener = added[0] as (err: NodeJS.ErrnoException) => void;
    process.exitCode = 3;
    listener(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
    listener(Object.assign(new Error('write EIO'), { code: 'EIO' }));
    t.same(exits, [3], 'exited once, with the code already set; EIO left to other handlers');
  },
);

t.test('printData writes to stdout and arms the quiet EPIPE exit once', async (t) => {
  const before = process.stdout.listeners('error').length;
  const writes: string[] = [];
  const realWrite = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string) => (writes.push(chunk), true)) as typeof process.stdout.write;
  t.teardown(() => {
    process.stdout.write = realWrite;
  });
  printData('one\n');
  printData('two\n');
  t.same(writes, ['one\n', 'two\n']);
  const added = process.stdout.listeners('error').slice(before);
  t.equal(added.length, 1, 'one listener for both writes');
  for (const l of added) process.stdout.off('error', l as (err: Error) => void);
});

/** O_NONBLOCK of a descriptor of a running process, from /proc. */
const nonBlocking = (pid: number, fd: number) =>
  (parseInt(/flags:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8'))?.[1] ?? '0', 8) & 0o4000) !== 0;

t.test(
  'the daemon leaves the stdout and stderr it inherits blocking, for itself and the scripts it runs',
  { skip: !existsSync('/proc/self/fdinfo') && 'needs /proc' },
  async (t) => {
    const root = t.testdir({
      etc: { 'os-collect-config.conf': '[DEFAULT]\ncollectors = local\ncommand = true\npolling_interval = 3600\n' },
      var: { lib: { 'os-collect-config': { 'local-data': { 'm.json': '{"a": 1}' } } } },
      usr: {
        libexec: {
          'os-refresh-config': {
            'configure.d': {
              '10-flags':
                '#!/bin/sh\necho to-stdout\ngrep flags /proc/self/fdinfo/1 /proc/self/fdinfo/2 > "$(dirname "$0")/../../../../flags.txt"\n',
            },
          },
        },
      },
    });
    chmodSync(path.join(root, 'var/lib/os-collect-config/local-data'), 0o700);
    chmodSync(path.join(root, 'var/lib/os-collect-config/local-data/m.json'), 0o600);
    chmodSync(path.join(root, 'usr/libexec/os-refresh-config/configure.d/10-flags'), 0o755);
    // Without tap's loader hooks, whose worker makes stdio non-blocking itself: tap adds them to every child's
    // NODE_OPTIONS as it is spawned, so env drops them just before node starts (exec: the pid stays the same).
    const child = spawn(
      '/usr/bin/env',
      ['-u', 'NODE_OPTIONS', process.execPath, requireBundle(), 'run', '--root', root],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    t.teardown(() => void child.kill('SIGKILL'));
    child.stderr.resume();
    // A whole cycle: collection, the phases with the user's script, the cache commit.
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no complete cycle within 30 s')), 30_000);
      let seen = '';
      child.stdout.on('data', (c: Buffer) => {
        seen += c.toString();
        if (seen.includes('cycle complete')) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    const pid = child.pid as number;
    t.equal(nonBlocking(pid, 1), false, 'stdout (the log stream) still blocking');
    t.equal(nonBlocking(pid, 2), false, 'stderr still blocking');
    const scriptFlags = readFileSync(path.join(root, 'flags.txt'), 'utf8').trim().split('\n');
    t.equal(scriptFlags.length, 2, 'the phase script ran and saw both descriptors');
    for (const line of scriptFlags)
      t.equal(
        parseInt(/flags:\s+(\d+)/.exec(line)?.[1] ?? '0', 8) & 0o4000,
        0,
        `script's ${line.split(':')[0]}: blocking`,
      );
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  },
);
