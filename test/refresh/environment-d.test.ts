import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import {
  environmentFiles,
  EnvironmentSourceError,
  parseEnvZero,
  sourceEnvironment,
} from '../../src/refresh/environment-d.js';

const BASE = { PATH: process.env.PATH ?? '/usr/bin:/bin', KEEP: 'kept' };

t.test('files: depth 1, regular files or links to them, dots allowed, byte order', async (t) => {
  const dir = t.testdir({ '9-a': '', '10-b': '', 'a.b': '', 'bad name': '', sub: {}, 'x~': '' });
  symlinkSync(path.join(dir, '9-a'), path.join(dir, '20-link'));
  symlinkSync(path.join(dir, 'missing'), path.join(dir, '30-dangling'));
  t.same(
    (await environmentFiles(dir)).map((f) => path.basename(f)),
    ['10-b', '20-link', '9-a', 'a.b'],
  );
  t.same(await environmentFiles(path.join(dir, 'nope')), []);
});

t.test(
  'sourcing: exported values reach the result, plain assignments do not, later files see earlier ones',
  async (t) => {
    const dir = t.testdir({
      '10-first': 'export FIRST=one\nUNEXPORTED=hidden\nexport KEEP="$KEEP-more"\necho "printed by an env file"\n',
      '20-second': 'export SECOND="$FIRST two"\nexport MULTI="line1\nline2"\nnot_executable_is_fine=1\n',
    });
    const env = await sourceEnvironment(await environmentFiles(dir), BASE, { stderr: 'ignore' });
    t.equal(env.FIRST, 'one');
    t.equal(env.SECOND, 'one two');
    t.equal(env.MULTI, 'line1\nline2');
    t.equal(env.KEEP, 'kept-more');
    t.notOk('UNEXPORTED' in env);
    t.notOk('__oca_env_file' in env, 'the loop variable does not leak');
  },
);

t.test('no files: the environment is returned unchanged without starting bash', async (t) => {
  const env = await sourceEnvironment([], { ...BASE, PATH: '/nonexistent' });
  t.same(env, { ...BASE, PATH: '/nonexistent' });
});

t.test('a failing file (set -eu) rejects with its exit status', async (t) => {
  const dir = t.testdir({ '10-unset': 'echo "$NOT_SET_ANYWHERE"\n', '20-false': 'false\n' });
  await t.rejects(sourceEnvironment([path.join(dir, '10-unset')], BASE, { stderr: 'ignore' }), EnvironmentSourceError);
  const err = await sourceEnvironment([path.join(dir, '20-false')], BASE, { stderr: 'ignore' }).catch(
    (e: unknown) => e,
  );
  t.ok(err instanceof EnvironmentSourceError);
  t.equal((err as EnvironmentSourceError).exitCode, 1);
});

t.test('parseEnvZero keeps values with = and newlines, skips junk', async (t) => {
  t.same({ ...parseEnvZero(Buffer.from('A=1\0B=x=y\0C=a\nb\0=bad\0noeq\0\0')) }, { A: '1', B: 'x=y', C: 'a\nb' });
});

t.test('exported bash functions survive for bash scripts', async (t) => {
  const dir = t.testdir({});
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, '10-fn'), 'greet() { echo hi; }\nexport -f greet\n');
  const env = await sourceEnvironment([path.join(dir, '10-fn')], BASE, { stderr: 'ignore' });
  t.ok(
    Object.keys(env).some((k) => k.includes('greet')),
    'BASH_FUNC_greet%% is present',
  );
});
