// Child process for test/cli/stdio-blocking.test.ts: prints the O_NONBLOCK state of fd 1 and 2 after Node has
// created the stdio streams, with or without keepStdioBlocking() installed first.
import { spawn } from 'node:child_process';
import { readFileSync, writeSync } from 'node:fs';
import { keepStdioBlocking } from '../../src/cli/stdio-blocking.js';

const nonBlocking = (fd: number) =>
  (parseInt(/flags:\s+(\d+)/.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'))?.[1] ?? '0', 8) & 0o4000) !== 0;
if (process.argv[2] === 'keep') keepStdioBlocking();
// What makes Node create them: a child with pipes, whose teardown compares its sockets with process.stderr, and a
// write to stdout.
const child = spawn('true', { stdio: ['ignore', 'pipe', 'pipe'] });
child.on('close', () => {
  setImmediate(() => {
    process.stdout.write('');
    writeSync(
      3,
      JSON.stringify({ stdout: nonBlocking(1), stderr: nonBlocking(2), same: process.stderr === process.stderr }),
    );
  });
});
