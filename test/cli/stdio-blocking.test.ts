import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import t from 'tap';

// A real child on pipes, as the daemon's stdio is a socket under systemd: its descriptors' O_NONBLOCK flags are read
// from /proc after Node has created process.stdout and process.stderr.
const child = new URL('./stdio-blocking-child.ts', import.meta.url).pathname;
const loader = process.execArgv.filter((a) => a.includes('@tapjs/typescript'));

function run(mode: 'keep' | 'plain'): { stdout: boolean; stderr: boolean; same: boolean } {
  // env -u: tap adds its process-tracking hooks to every child's NODE_OPTIONS, and their worker touches stdio itself.
  const res = spawnSync('/usr/bin/env', ['-u', 'NODE_OPTIONS', process.execPath, ...loader, child, mode], {
    stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
    encoding: 'utf8',
    timeout: 30_000,
  });
  return JSON.parse(res.output[3] as string) as { stdout: boolean; stderr: boolean; same: boolean };
}

t.test(
  'Node leaves piped stdio non-blocking once it creates the streams (what keepStdioBlocking exists for)',
  { skip: !existsSync('/proc/self/fdinfo') && 'needs /proc' },
  async (t) => {
    t.same(run('plain'), { stdout: true, stderr: true, same: true });
  },
);

t.test(
  'with keepStdioBlocking the same streams stay blocking, and each is created once',
  { skip: !existsSync('/proc/self/fdinfo') && 'needs /proc' },
  async (t) => {
    t.same(run('keep'), { stdout: false, stderr: false, same: true });
  },
);
