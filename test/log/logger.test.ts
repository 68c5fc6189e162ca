import { spawn, spawnSync } from 'node:child_process';
import { Writable } from 'node:stream';
import t from 'tap';
import { LOG_LEVELS, parseLogLevel } from '../../src/log/log-level.js';
import { createLogger, holdLogLines } from '../../src/log/logger.js';
import { registerSecret, secrets } from '../../src/log/redact.js';

// createLogger with a destination stream, exactly as production builds it; the raw lines are checked as written.
function capture(level?: 'debug' | 'info' | 'trace') {
  const raw: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      for (const line of String(chunk).split('\n')) if (line !== '') raw.push(line);
      cb();
    },
  });
  const log = createLogger({ destination: stream, ...(level ? { level } : {}) });
  return { log, raw, lines: () => raw.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

t.afterEach(() => secrets.clear());

t.test('lines are JSON with level label, name, ISO time, message and fields', async (t) => {
  const { log, lines } = capture();
  log
    .child({ component: 'collector', collector: 'local' })
    .info({ dir: '/x' }, 'local data directory not found; skipping');
  const [line] = lines();
  t.match(line, {
    level: 'info',
    name: 'os-config-agent',
    component: 'collector',
    collector: 'local',
    dir: '/x',
    msg: 'local data directory not found; skipping',
  });
  t.match(line?.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
});

t.test('level filtering: info by default, debug when asked', async (t) => {
  const info = capture();
  info.log.debug('hidden');
  info.log.info('shown');
  t.same(
    info.lines().map((l) => l.msg),
    ['shown'],
  );
  const debug = capture('debug');
  debug.log.debug('now shown');
  t.same(
    debug.lines().map((l) => l.msg),
    ['now shown'],
  );
});

t.test('a registered secret never reaches a line: message, field, nested field, URL, Error', async (t) => {
  const secret = 'Sup3r $ecret/"pw"(x)';
  registerSecret(secret);
  const { log, raw } = capture('trace');
  log.info(`interpolated ${secret} into a message`);
  log.info({ detail: secret }, 'as a field');
  log.warn({ config: { heat: { auth: { value: secret } } } }, 'nested deeply');
  log.info({ url: `https://keystone/v3?x=${encodeURIComponent(secret)}` }, 'inside a URL');
  log.info({ form: new URLSearchParams({ pw: secret }).toString() }, 'form-encoded');
  log.error({ err: new Error(`login failed for password ${secret}`) }, 'as an Error message and stack');
  log.error(new Error(`bare error ${secret}`));
  log.debug({ list: [secret, { k: secret }] }, 'in a list');
  t.equal(raw.length, 8);
  for (const line of raw) {
    t.notOk(line.includes('Sup3r'), `no trace of the secret: ${line.slice(0, 80)}`);
    t.doesNotThrow(() => JSON.parse(line), 'still valid JSON');
  }
  t.match(raw.join('\n'), /\[REDACTED\]/);
});

t.test('credential fields are redacted by name even when not registered', async (t) => {
  const { log, lines } = capture();
  log.info(
    {
      password: 'p1',
      heat: { password: 'p2' },
      cfn: { secret_access_key: 'k1' },
      token: 't1',
      headers: { authorization: 'Bearer x', 'x-auth-token': 'tok' },
    },
    'creds',
  );
  const [line] = lines() as Array<Record<string, never>>;
  t.equal(line?.password, '[REDACTED]');
  t.same(line?.heat, { password: '[REDACTED]' });
  t.same(line?.cfn, { secret_access_key: '[REDACTED]' });
  t.equal(line?.token, '[REDACTED]');
  t.same(line?.headers, { authorization: '[REDACTED]', 'x-auth-token': '[REDACTED]' });
});

t.test('credential fields are redacted whatever their type, and in child bindings', async (t) => {
  const { log, lines } = capture();
  log.child({ token: 'bound-token' }).info({ password: 98765, heat: { token: { id: 'obj' } } }, 'typed');
  const [line] = lines() as Array<Record<string, never>>;
  t.equal(line?.token, '[REDACTED]', 'a binding');
  t.equal(line?.password, '[REDACTED]', 'a number');
  t.same(line?.heat, { token: '[REDACTED]' }, 'an object');
});

t.test('signed URLs logged by careless code are scrubbed by shape', async (t) => {
  const { log, raw } = capture();
  log.info({ url: 'http://h:8000/v1/signal/x?Signature=c2lnbmF0dXJl&Timestamp=1' }, 'signal');
  log.info({ url: 'https://admin:adminpw@keystone:5000/v3' }, 'userinfo');
  t.notOk(raw.join('\n').includes('c2lnbmF0dXJl'));
  t.notOk(raw.join('\n').includes('adminpw'));
});

t.test('createLogger with the standard streams', async (t) => {
  t.equal(createLogger().level, 'info');
  t.equal(createLogger({ level: 'warn', destination: 'stderr' }).level, 'warn');
  t.equal(createLogger({ level: 'silent', destination: 'stdout' }).level, 'silent');
});

t.test('parseLogLevel', async (t) => {
  for (const level of LOG_LEVELS) t.equal(parseLogLevel(level), level);
  t.equal(parseLogLevel('DEBUG'), 'debug');
  t.equal(parseLogLevel('Info'), 'info');
  t.equal(parseLogLevel('warning'), 'warn', 'Python logging spelling');
  t.equal(parseLogLevel('WARNING'), 'warn');
  t.equal(parseLogLevel('critical'), 'fatal');
  t.throws(() => parseLogLevel('verbose'), {
    message: /unknown log level "verbose": use one of fatal, error, warn, info, debug, trace, silent/,
  });
  t.throws(() => parseLogLevel(''), /unknown log level/);
  t.throws(() => parseLogLevel('constructor'), /unknown log level/);
});

// The buffered destination (short-lived commands) is tested in a real child process: its lines reach stderr at exit
// and when the logger is flushed, and not before.
const child = new URL('./buffered-child.ts', import.meta.url).pathname;
const childArgs = [...process.execArgv.filter((a) => a.includes('@tapjs/typescript')), child];

t.test('buffered logger: every line is written by the time the process exits, process.exit included', async (t) => {
  const res = spawnSync(process.execPath, [...childArgs, 'exit'], { encoding: 'utf8', timeout: 30_000 });
  t.equal(res.status, 3);
  const lines = res.stderr
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { path: string });
  t.equal(lines.length, 300);
  t.equal(lines[299]?.path, '/etc/app/file-299.conf');
});

/** The messages a child in `mode` had written to stderr when it said "waiting" on stdout (it is then killed). */
async function messagesBeforeKill(mode: string): Promise<string[]> {
  const proc = spawn(process.execPath, [...childArgs, mode], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const killer = setTimeout(() => proc.kill('SIGKILL'), 30_000);
  await new Promise<void>((resolve) =>
    proc.stdout.on('data', (c: Buffer) => c.toString().includes('waiting') && resolve()),
  );
  // Whatever the child wrote before it said "waiting" is in the pipe; give the reader a moment to drain it.
  await new Promise((r) => setTimeout(r, 200));
  proc.kill('SIGKILL');
  await new Promise((r) => proc.on('close', r));
  clearTimeout(killer);
  return stderr
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => (JSON.parse(l) as { msg: string }).msg);
}

t.test('buffered logger: flush() writes at once; lines after it wait for the next flush or exit', async (t) => {
  t.same(
    await messagesBeforeKill('flush-then-hang'),
    Array(5).fill('before the wait'),
    'the flushed lines, and not the line still buffered when it was killed',
  );
});

t.test(
  'holdLogLines: a held logger writes nothing until released; then the held lines, and each later line at once',
  async (t) => {
    t.same(await messagesBeforeKill('hold-then-hang'), [], 'held lines are not written yet');
    t.same(await messagesBeforeKill('hold-release-then-hang'), [...Array(5).fill('held'), 'after the release']);
  },
);

t.test('holdLogLines on a logger with a stream of its own: nothing is held', async (t) => {
  const { log, lines } = capture();
  const release = holdLogLines(log);
  log.info('at once');
  t.equal(lines().length, 1);
  release();
});

t.test('the code field of a log line is one of the documented error codes (checked by tsc --noEmit)', async (t) => {
  const { log, lines } = capture();
  log.error({ code: 'ERR_CACHE_WRITE' }, 'cache write failed; nothing run or committed');
  // @ts-expect-error a code outside the ErrorCode union (src/errors.ts) does not compile
  log.error({ code: 'ERR_NOT_A_CODE' }, 'no such code');
  // @ts-expect-error an errno is not an error code: it goes in another field
  log.warn({ code: 'ENOENT' as string }, 'not a code either');
  t.same(
    lines().map((l) => l.code),
    ['ERR_CACHE_WRITE', 'ERR_NOT_A_CODE', 'ENOENT'],
  );
});
