import { readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { AgentError, CacheWriteError, CommandFailedError, ConfigError, errorCode, errorMessage, SourceNotConfiguredError, SourceUnavailableError, UnsafeNameError, UnsafePathError } from '../src/errors.js';
import { REPO } from './helpers/bundle.js';

// Error codes are a public interface (scripts and operators match on them): every code in src/errors.ts is
// documented in the README's Errors table, and the table names no code that does not exist.
const source = readFileSync(path.join(REPO, 'src/errors.ts'), 'utf8');
const union = source.slice(source.indexOf('export type ErrorCode'), source.indexOf(';', source.indexOf('export type ErrorCode')));
const codes = [...union.matchAll(/'(ERR_[A-Z_]+)'/g)].map((m) => m[1] as string);
const readme = readFileSync(path.join(REPO, 'README.md'), 'utf8');
const section = readme.slice(readme.indexOf('## Errors'), readme.indexOf('\n## ', readme.indexOf('## Errors') + 5));

t.test('codes are unique and all documented', async (t) => {
  t.ok(codes.length > 10, 'the code list was parsed');
  t.equal(new Set(codes).size, codes.length, 'no duplicate codes');
  for (const code of codes) t.match(section, `\`${code}\``, `${code} is documented in README § Errors`);
  const documented = [...section.matchAll(/`(ERR_[A-Z_]+)`/g)].map((m) => m[1]);
  for (const code of documented) t.ok(codes.includes(code as string), `${code} in the README exists in src/errors.ts`);
});

t.test('error classes carry stable codes, names and causes', async (t) => {
  const cause = new Error('root cause');
  const cases: Array<[AgentError, string, string]> = [
    [new ConfigError('bad', { cause }), 'ConfigError', 'ERR_CONFIG_INVALID'],
    [new SourceNotConfiguredError('cfn', 'no url'), 'SourceNotConfiguredError', 'ERR_SOURCE_NOT_CONFIGURED'],
    [new SourceUnavailableError('cfn', 'down'), 'SourceUnavailableError', 'ERR_SOURCE_UNAVAILABLE'],
    [new SourceUnavailableError('local', 'insecure', { code: 'ERR_SOURCE_INSECURE' }), 'SourceUnavailableError', 'ERR_SOURCE_INSECURE'],
    [new CacheWriteError('disk full'), 'CacheWriteError', 'ERR_CACHE_WRITE'],
    [new CommandFailedError('exit 3', 3), 'CommandFailedError', 'ERR_COMMAND_FAILED'],
    [new UnsafeNameError('../x'), 'UnsafeNameError', 'ERR_UNSAFE_NAME'],
    [new UnsafePathError('/etc/passwd'), 'UnsafePathError', 'ERR_UNSAFE_PATH'],
  ];
  for (const [err, name, code] of cases) {
    t.ok(err instanceof AgentError && err instanceof Error);
    t.equal(err.name, name);
    t.equal(err.code, code);
    t.equal(errorCode(err), code);
  }
  t.equal((cases[0]?.[0] as Error).cause, cause);
  t.equal((cases[5]?.[0] as CommandFailedError).exitCode, 3);
  t.equal(errorMessage('plain'), 'plain');
  t.equal(errorMessage(new Error('m')), 'm');
  t.equal(errorCode({ code: 'ENOENT' }), 'ENOENT');
  t.equal(errorCode(42), undefined);
});
