import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { runBundle } from '../helpers/bundle.js';
import { startWaitConditionServer, type WaitConditionServer } from '../helpers/wait-condition-server.js';

// Conformance with Debian's heat-cfntools 1.4.2 cfn-signal (installed by .ci/run, with curl, which it runs): for the
// same flags both send the same request (PUT, the same body bytes) to a server that checks it as heat-api-cfn does.
// Exit codes differ where documented (docs/wait-conditions.md): upstream exits with curl's status, 0 even for a 403.
// Upstream logs to /var/log/cfn-signal.log by logging.basicConfig; the test runs it with that call made a no-op, so
// nothing is written outside the test's directory.

const UPSTREAM = '/usr/bin/cfn-signal';
const CURL = '/usr/bin/curl';
const missing = !existsSync(UPSTREAM)
  ? `${UPSTREAM} is missing (Debian heat-cfntools)`
  : !existsSync(CURL)
    ? `${CURL} is missing (Debian curl)`
    : undefined;
const PRELUDE =
  "import logging, runpy, sys; logging.basicConfig = lambda **kw: None; sys.argv = ['cfn-signal'] + sys.argv[1:]; runpy.run_path('/usr/bin/cfn-signal', run_name='__main__')";

function upstream(args: readonly string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    // No proxy variables: the request must go straight to the loopback server.
    const child = spawn('/usr/bin/python3', ['-c', PRELUDE, ...args], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { PATH: '/usr/bin:/bin', LC_ALL: 'C.UTF-8' },
    });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

let server: WaitConditionServer;
t.before(async () => {
  server = await startWaitConditionServer();
});
t.teardown(() => server?.close());

function instanceRoot(dir: string): string {
  mkdirSync(path.join(dir, 'etc'), { recursive: true });
  writeFileSync(path.join(dir, 'etc/os-collect-config.conf'), '[deploy]\nsignal_timeout = 5\n');
  return dir;
}

t.test('the same request for the same flags', { skip: missing }, async (t) => {
  const root = instanceRoot(t.testdir());
  const cases: string[][] = [
    ['-i', 'web-1'],
    ['-i', 'web-2', '-e', '3', '-r', 'exit status 3', '-d', 'see /var/log/boot.log'],
    ['-i', 'web-3', '-s', 'false', '-d', 'ünïcødé "quoted" \\ back\nslash'],
    ['--id', 'web-4', '--exit', '0', '--success', 'false', '--reason', ''],
    ['-i', 'web-5', '-e', '', '-s', 'true'],
  ];
  for (const flags of cases) {
    const url = server.cfnUrl('conformance');
    const before = server.requests.length;
    const theirs = await upstream([...flags, url]);
    const ours = await runBundle(['cfn-signal', '--root', root, ...flags, url]);
    const [a, b] = server.requests.slice(before);
    t.equal(theirs.code, 0, `upstream ${flags.join(' ')}: ${theirs.stderr}`);
    t.equal(ours.code, 0, `ours ${flags.join(' ')}: ${ours.stderr}`);
    t.equal(a?.status, 200, 'upstream accepted');
    t.equal(b?.status, 200, 'ours accepted');
    t.equal(b?.method, a?.method, 'same method (PUT)');
    t.equal(b?.raw, a?.raw, `same body bytes for ${flags.join(' ')}`);
  }
});

t.test('where the exit codes differ: a refused signal, an unreachable server', { skip: missing }, async (t) => {
  const root = instanceRoot(t.testdir());
  const expired = server.cfnUrl('conformance', { timestamp: new Date(Date.now() - 7200_000) });
  t.equal((await upstream(['-i', 'x', expired])).code, 0, 'upstream: curl exits 0 on a 403, the signal lost silently');
  t.equal(
    (await runBundle(['cfn-signal', '--root', root, '-i', 'x', expired])).code,
    1,
    'ours: refused for good, exit 1',
  );
  const closed = 'http://127.0.0.1:9/v1/waitcondition/x?Signature=abc';
  t.equal((await upstream(['-i', 'y', closed])).code, 7, "upstream: curl's 7, the signal lost");
  t.equal(
    (await runBundle(['cfn-signal', '--root', root, '-i', 'y', closed])).code,
    3,
    'ours: queued for the agent, exit 3',
  );
});
