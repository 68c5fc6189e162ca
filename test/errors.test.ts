import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import {
  AgentError,
  CacheWriteError,
  CommandFailedError,
  errorMessage,
  SourceNotConfiguredError,
  SourceUnavailableError,
  UnsafeNameError,
  UnsafePathError,
} from '../src/errors.js';
import { REPO } from './helpers/bundle.js';

// Error codes are a public interface (scripts and operators match on them): every code in src/errors.ts, and every
// other code the sources put in a log line or a hook result, is documented in docs/troubleshooting.md § Error codes,
// and that section names no code that does not exist.
const source = readFileSync(path.join(REPO, 'src/errors.ts'), 'utf8');
const union = source.slice(
  source.indexOf('export type ErrorCode'),
  source.indexOf(';', source.indexOf('export type ErrorCode')),
);
const codes = [...union.matchAll(/'(ERR_[A-Z_]+)'/g)].map((m) => m[1] as string);
const doc = readFileSync(path.join(REPO, 'docs/troubleshooting.md'), 'utf8');
const start = doc.indexOf('## Error codes');
const next = doc.indexOf('\n## ', start + 5);
const section = doc.slice(start, next < 0 ? undefined : next);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : [],
  );
}
const everyCode = new Set(
  sourceFiles(path.join(REPO, 'src')).flatMap((f) =>
    [...readFileSync(f, 'utf8').matchAll(/'(ERR_[A-Z_]+)'/g)].map((m) => m[1] as string),
  ),
);

t.test('codes are unique and all documented', async (t) => {
  t.ok(start >= 0, 'docs/troubleshooting.md has an Error codes section');
  t.ok(codes.length > 10, 'the code list was parsed');
  t.equal(new Set(codes).size, codes.length, 'no duplicate codes');
  for (const code of codes)
    t.match(section, `\`${code}\``, `${code} is documented in docs/troubleshooting.md § Error codes`);
  for (const code of everyCode) t.match(section, `\`${code}\``, `${code} (used in src/) is documented`);
  const documented = [...section.matchAll(/`(ERR_[A-Z_]+)`/g)].map((m) => m[1]);
  for (const code of documented)
    t.ok(everyCode.has(code as string), `${code} in docs/troubleshooting.md exists in src/`);
});

t.test('error classes carry stable codes, names and causes', async (t) => {
  const cause = new Error('root cause');
  const cases: Array<[AgentError, string, string]> = [
    [new SourceNotConfiguredError('cfn', 'no url'), 'SourceNotConfiguredError', 'ERR_SOURCE_NOT_CONFIGURED'],
    [new SourceUnavailableError('cfn', 'down'), 'SourceUnavailableError', 'ERR_SOURCE_UNAVAILABLE'],
    [
      new SourceUnavailableError('local', 'insecure', { code: 'ERR_SOURCE_INSECURE' }),
      'SourceUnavailableError',
      'ERR_SOURCE_INSECURE',
    ],
    [new CacheWriteError('disk full', { cause }), 'CacheWriteError', 'ERR_CACHE_WRITE'],
    [new CommandFailedError('exit 3', 3), 'CommandFailedError', 'ERR_COMMAND_FAILED'],
    [new UnsafeNameError('../x'), 'UnsafeNameError', 'ERR_UNSAFE_NAME'],
    [new UnsafePathError('/etc/passwd'), 'UnsafePathError', 'ERR_UNSAFE_PATH'],
  ];
  for (const [err, name, code] of cases) {
    t.ok(err instanceof AgentError && err instanceof Error);
    t.equal(err.name, name);
    t.equal(err.code, code);
  }
  t.equal((cases[3]?.[0] as Error).cause, cause);
  t.equal((cases[4]?.[0] as CommandFailedError).exitCode, 3);
  t.equal(errorMessage('plain'), 'plain');
  t.equal(errorMessage(new Error('m')), 'm');
});

t.test('a message is scrubbed as the error is made: signed URLs, user-info, headers, registered values', async (t) => {
  const { registerSecret, secrets } = await import('../src/log/redact.js');
  t.teardown(() => secrets.clear());
  registerSecret('cfg-secret-0451');
  const err = new SourceUnavailableError(
    'request',
    'GET http://u:pw@h/o?temp_url_sig=abc&token=t1 failed, Authorization: Bearer tok9 with cfg-secret-0451',
  );
  t.equal(
    err.message,
    'GET http://[REDACTED]@h/o?temp_url_sig=[REDACTED]&token=[REDACTED] failed, Authorization: [REDACTED] with [REDACTED]',
  );
  t.equal(new AgentError('ERR_HTTP', 'nothing secret here').message, 'nothing secret here');
});
