import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { requireBundle, runBundle } from '../helpers/bundle.js';
import type { TapTest } from '../helpers/http-test-server.js';
import { startWaitConditionServer, type WaitConditionServer } from '../helpers/wait-condition-server.js';

// `cfn-signal` / `os-config-agent cfn-signal` run as a user-data script runs them, with no daemon: the real bundle
// under --root, against a server that checks each request as heat-api-cfn (or heat-api, for the native handle) does.
// With no daemon the command attempts the signal itself; the daemon's side is in test/daemon/signal-queue-service.test.ts.

// The compatibility name as the element installs it: a link named cfn-signal to the bundle (dist/bin/cfn-signal, an
// extensionless ES module, cannot run under tap's CommonJS loader hooks, which tap puts into every child process).
const COMPAT = path.join(t.testdirName, '..', 'cfn-signal-compat', 'cfn-signal');
mkdirSync(path.dirname(COMPAT), { recursive: true });
rmSync(COMPAT, { force: true });
symlinkSync(requireBundle(), COMPAT);
const compat = { entry: COMPAT };

let server: WaitConditionServer;
t.before(async () => {
  server = await startWaitConditionServer();
});
t.teardown(() => server.close());

/** An instance root whose signal retries are quick (backoff capped at 1 s). */
function instanceRoot(t: TapTest, extra = ''): string {
  const root = t.testdir();
  mkdirSync(path.join(root, 'etc'), { recursive: true });
  writeFileSync(
    path.join(root, 'etc/os-collect-config.conf'),
    `[deploy]\nsignal_max_backoff = 1\nsignal_timeout = 5\n${extra}`,
    { mode: 0o600 },
  );
  return root;
}

const queueDir = (root: string) => path.join(root, 'var/lib/os-config-agent/signals');

function queued(root: string): Array<Record<string, unknown>> {
  let names: string[] = [];
  try {
    names = readdirSync(queueDir(root)).filter((n) => n.endsWith('.json'));
  } catch {
    return [];
  }
  return names
    .sort()
    .map((n) => JSON.parse(readFileSync(path.join(queueDir(root), n), 'utf8')) as Record<string, unknown>);
}

function secretsIn(text: string): string[] {
  const found: string[] = [];
  if (/Signature=(?!%5BREDACTED|\[REDACTED)[A-Za-z0-9%+/]{6}/.test(text)) found.push('Signature');
  if (text.includes(server.token)) found.push('token');
  return found;
}

t.test('CFN handle: the body cfn-signal PUTs, delivered once; the settled file keeps no URL', async (t) => {
  const root = instanceRoot(t);
  const url = server.cfnUrl('wc_ok');
  const before = server.requests.length;
  const res = await runBundle(['--root', root, '-i', 'web-1', '-r', 'all done', '-d', 'ünïcode "data"', url], compat);
  t.equal(res.code, 0, 'delivered: exit 0');
  t.equal(res.stdout, '', 'nothing on stdout, as cfn-signal');
  const mine = server.requests.slice(before);
  t.equal(mine.length, 1, 'one request');
  t.equal(mine[0]?.method, 'PUT');
  t.equal(
    mine[0]?.raw,
    '{"Status": "SUCCESS", "Reason": "all done", "UniqueId": "web-1", "Data": "\\u00fcn\\u00efcode \\"data\\""}',
    "json.dumps's bytes",
  );
  t.same(Object.fromEntries(server.handles.get('wc_ok') ?? []), {
    'web-1': { Status: 'SUCCESS', Reason: 'all done', Data: 'ünïcode "data"' },
  });
  const [entry] = queued(root);
  t.equal(entry?.state, 'sent');
  t.equal(entry?.url, undefined, 'the pre-signed URL is dropped once sent');
  t.equal(entry?.text, undefined);
  t.match(entry?.shownUrl, /Signature=%5BREDACTED%5D|Signature=\[REDACTED\]/);
  t.equal(statSync(queueDir(root)).mode & 0o777, 0o700, 'queue directory 0700');
  t.equal(statSync(path.join(queueDir(root), `${String(entry?.id)}.json`)).mode & 0o777, 0o600, 'signal file 0600');
  t.same(secretsIn(res.stderr), []);
});

t.test('status flags as cfn-signal reads them; default id from nova_meta.json', async (t) => {
  const root = instanceRoot(t);
  mkdirSync(path.join(root, 'var/lib/heat-cfntools'), { recursive: true });
  writeFileSync(path.join(root, 'var/lib/heat-cfntools/nova_meta.json'), JSON.stringify({ uuid: '5d0c7b7e-uuid' }));
  const cases: Array<[string[], string]> = [
    [['-e', '0'], 'SUCCESS'],
    [['-e', '3', '-s', 'true'], 'FAILURE'],
    [['-s', 'false'], 'FAILURE'],
    [['-s', 'True'], 'FAILURE'],
    [['--exit', '0', '-s', 'false'], 'SUCCESS'],
    [['-e', '', '-s', 'true'], 'SUCCESS'],
  ];
  for (const [flags, status] of cases) {
    const before = server.requests.length;
    const res = await runBundle(['cfn-signal', '--root', root, ...flags, server.cfnUrl('wc_flags')]);
    t.equal(res.code, 0, `${flags.join(' ')}: exit 0`);
    const body = JSON.parse(server.requests[before]?.raw ?? '{}') as Record<string, unknown>;
    t.equal(body.Status, status, `${flags.join(' ')} -> ${status}`);
    t.equal(body.UniqueId, '5d0c7b7e-uuid', 'the Nova uuid is the default id');
    t.equal(body.Reason, 'Configuration Complete');
    t.equal(body.Data, 'Application has completed configuration.');
  }
});

t.test(
  'a final refusal (403: expired or wrong signature) exits 1, settles the signal, shows no signature',
  async (t) => {
    const root = instanceRoot(t);
    const expired = await runBundle([
      'cfn-signal',
      '--root',
      root,
      '-i',
      'x',
      server.cfnUrl('wc_old', { timestamp: new Date(Date.now() - 3600_000) }),
    ]);
    t.equal(expired.code, 1);
    t.match(
      expired.stderr,
      /os-config-agent: the signal was not delivered: .*answered 403.*Credential is expired.*not retried/,
    );
    const forged = await runBundle(
      ['--root', root, '-i', 'x', server.cfnUrl('wc_forged', { secret: 'wrong' })],
      compat,
    );
    t.equal(forged.code, 1);
    t.match(forged.stderr, /^cfn-signal: the signal was not delivered: .*403/m);
    t.same(
      queued(root).map((e) => [e.state, e.url]),
      [
        ['failed', undefined],
        ['failed', undefined],
      ],
    );
    t.same(secretsIn(expired.stderr + forged.stderr), []);
  },
);

t.test('server down: exit 3 (queued, no daemon); --wait rides out the outage and exits 0 once delivered', async (t) => {
  const root = instanceRoot(t);
  await server.stop();
  let restarted = false;
  t.teardown(async () => {
    if (!restarted) await server.start();
  });
  const before = server.accepted();
  const down = await runBundle(['cfn-signal', '--root', root, '-i', 'a', server.cfnUrl('wc_down')]);
  t.equal(down.code, 3, 'queued but not delivered');
  t.match(down.stderr, /queued as \S+ but not delivered .*connection refused.*no os-config-agent daemon is running/);
  t.equal(queued(root)[0]?.state, 'pending');

  const timedOut = await runBundle([
    'cfn-signal',
    '--root',
    root,
    '--wait',
    '--wait-timeout',
    '1',
    '-i',
    'b',
    server.cfnUrl('wc_down'),
  ]);
  t.equal(timedOut.code, 3, '--wait ran out of time');
  t.match(timedOut.stderr, /not delivered within 1 s/);

  const waiting = runBundle(
    ['cfn-signal', '--root', root, '--wait', '--wait-timeout', '120', '-i', 'c', server.cfnUrl('wc_down')],
    { timeoutMs: 150_000 },
  );
  // Bring the server back once the waiting command has failed at least one attempt.
  const deadline = Date.now() + 60_000;
  while (
    !queued(root).some((e) => (e.text as string | undefined)?.includes('"c"') && (e.attempts as number) >= 1) &&
    Date.now() < deadline
  )
    await new Promise((r) => setTimeout(r, 50));
  await server.start();
  restarted = true;
  const res = await waiting;
  t.equal(res.code, 0, 'delivered after the outage');
  const accepted = server.requests.filter((r) => r.status === 200).slice(-1)[0];
  t.match(accepted?.raw, /"UniqueId": "c"/);
  t.ok(server.accepted() - before >= 1, 'delivered');
  t.equal(
    server.requests.filter((r) => r.status === 200 && r.raw.includes('"UniqueId": "c"')).length,
    1,
    'exactly once',
  );
  t.same(secretsIn(down.stderr + timedOut.stderr + res.stderr), []);
});

t.test('native handle: POST with the token, the wc_notify body; a bad token is final', async (t) => {
  const root = instanceRoot(t);
  const before = server.requests.length;
  const res = await runBundle([
    'cfn-signal',
    '--root',
    root,
    '--token',
    server.token,
    '--body',
    '{"status": "FAILURE", "reason": "disk full", "id": "7"}',
    server.nativeUrl('wc_native'),
  ]);
  t.equal(res.code, 0);
  const req = server.requests[before];
  t.equal(req?.method, 'POST');
  t.equal(req?.headers['x-auth-token'], server.token);
  t.same(JSON.parse(req?.raw ?? '{}'), { status: 'FAILURE', reason: 'disk full', id: '7' });
  t.same(server.handles.get('wc_native')?.get('7'), { status: 'FAILURE', reason: 'disk full', data: null });

  const flags = await runBundle([
    'cfn-signal',
    '--root',
    root,
    '--token',
    server.token,
    '-e',
    '0',
    '-i',
    'n2',
    '-d',
    'ok',
    server.nativeUrl('wc_native'),
  ]);
  t.equal(flags.code, 0, 'the native body from cfn-signal flags');
  t.same(server.handles.get('wc_native')?.get('n2'), {
    status: 'SUCCESS',
    reason: 'Configuration Complete',
    data: 'ok',
  });

  // The native handle with signal_transport CFN_SIGNAL: its pre-signed URL takes the native body, PUT.
  const presigned = await runBundle([
    'cfn-signal',
    '--root',
    root,
    '--body',
    '{"status": "SUCCESS", "data": "via CFN_SIGNAL"}',
    server.cfnUrl('wc_native_cfn', { native: true }),
  ]);
  t.equal(presigned.code, 0);
  t.equal(server.requests.slice(-1)[0]?.method, 'PUT');
  t.same(server.handles.get('wc_native_cfn')?.get('1'), {
    status: 'SUCCESS',
    reason: 'Signal 1 received',
    data: 'via CFN_SIGNAL',
  });
  const capitalised = await runBundle([
    'cfn-signal',
    '--root',
    root,
    '-i',
    'x',
    server.cfnUrl('wc_native_cfn', { native: true }),
  ]);
  t.equal(capitalised.code, 1, "cfn-signal's own body is refused by a native handle (400, final), as Heat does");
  t.match(capitalised.stderr, /answered 400/);

  const wrong = await runBundle([
    'cfn-signal',
    '--root',
    root,
    '--token',
    'gAAAAA-not-the-token',
    '-i',
    'z',
    server.nativeUrl('wc_native'),
  ]);
  t.equal(wrong.code, 1, '401 is final');
  t.match(wrong.stderr, /answered 401/);
  t.same(secretsIn(res.stderr + flags.stderr + wrong.stderr), []);
  t.notMatch(wrong.stderr, 'gAAAAA-not-the-token', 'the token given is not shown either');
  t.notOk(
    queued(root).some((e) => 'token' in e),
    'settled files keep no token',
  );
});

t.test('bad input: exit 2, a clear message, nothing queued', async (t) => {
  const root = instanceRoot(t);
  const huge = path.join(root, 'huge.txt');
  writeFileSync(huge, 'x'.repeat(2 * 1024 * 1024));
  const cases: Array<[string, string[], RegExp]> = [
    ['no URL', ['-s', 'true'], /missing required argument 'url'/],
    ['not a URL', ['not a url'], /not a valid absolute URL/],
    ['not http', ['file:///etc/passwd'], /uses file:; only http and https/],
    ['huge data', ['--data-file', huge, server.cfnUrl('wc_bad')], /holds over 950000 bytes/],
    [
      'missing data file',
      ['--data-file', path.join(root, 'nope'), server.cfnUrl('wc_bad')],
      /cannot read --data-file .*ENOENT/,
    ],
    [
      'non-JSON body',
      ['--token', server.token, '--body', '{status: SUCCESS}', server.nativeUrl('wc_bad')],
      /--body is not JSON/,
    ],
    [
      'body not an object',
      ['--token', server.token, '--body', '["SUCCESS"]', server.nativeUrl('wc_bad')],
      /--body must be a JSON object/,
    ],
    [
      'body with a key Heat refuses',
      ['--token', server.token, '--body', '{"status": "SUCCESS", "extra": 1}', server.nativeUrl('wc_bad')],
      /key\(s\) Heat refuses: extra/,
    ],
    [
      'body with a bad status',
      ['--token', server.token, '--body', '{"status": "DONE"}', server.nativeUrl('wc_bad')],
      /"status" must be "SUCCESS" or "FAILURE"/,
    ],
    ['body and data', ['--body', '{"status": "SUCCESS"}', '-d', 'x', server.cfnUrl('wc_bad')], /leave out -d\/--data/],
    [
      'bad wait timeout',
      ['--wait', '--wait-timeout', 'soon', server.cfnUrl('wc_bad')],
      /--wait-timeout must be a number/,
    ],
    ['bad log level', ['--log-level', 'loud', server.cfnUrl('wc_bad')], /unknown log level "loud"/],
  ];
  const before = server.requests.length;
  for (const [what, args, message] of cases) {
    const res = await runBundle(['cfn-signal', '--root', root, ...args]);
    t.equal(res.code, 2, `${what}: exit 2`);
    t.match(res.stderr, message, `${what}: says why`);
    t.same(secretsIn(res.stderr), [], `${what}: no secret in the message`);
  }
  const stdin = await runBundle(['--root', root, '--data-file', '-', server.cfnUrl('wc_bad')], compat);
  t.equal(stdin.code, 0, '--data-file - reads standard input (empty here)');
  t.equal(JSON.parse(server.requests.slice(-1)[0]?.raw ?? '{}').Data, '');
  t.equal(server.requests.length, before + 1, 'only the valid signal reached the server');
  t.equal(queued(root).length, 1, 'nothing queued for the bad ones');
});

t.test(
  'nothing can be queued (the state directory cannot be made): exit 1, the file named, nothing sent',
  async (t) => {
    const root = instanceRoot(t, '[agent]\nstate_dir = /etc/os-collect-config.conf/state\n');
    const before = server.requests.length;
    const res = await runBundle(['cfn-signal', '--root', root, '-i', 'x', server.cfnUrl('wc_nostate')]);
    t.equal(res.code, 1);
    t.match(
      res.stderr,
      /os-config-agent: cannot create the directory \S*\/etc\/os-collect-config\.conf\/state\/signals: ENOTDIR; check the disk .* \[ERR_DEPLOYMENT_STATE\]/,
    );
    t.equal(server.requests.length, before, 'not sent either: a signal is only ever sent from the queue');
  },
);
