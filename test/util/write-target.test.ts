import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { checkName, resolveWriteTarget } from '../../src/util/write-target.js';

// The rule for files a deployment names: resolved from the root component by component; links followed only when
// root or the agent's user owns them and only while they stay inside the root. (Another user's link: the json-file,
// cfn-init and apply tests, as root.)

function tree(t: { testdir(): string }) {
  const base = t.testdir();
  const root = path.join(base, 'root');
  for (const d of ['etc/app', 'srv/data', 'var']) mkdirSync(path.join(root, d), { recursive: true });
  mkdirSync(path.join(base, 'outside'));
  writeFileSync(path.join(root, 'srv/data/file.json'), '{}');
  return { base, root, at: (p: string) => path.join(root, p) };
}

t.test('names: absolute, no "..", a file', async (t) => {
  for (const bad of ['', 'etc/x', '/etc/../x', '/etc/', '/', '/etc/.', 'a\0b']) t.throws(() => checkName(bad), bad);
  t.doesNotThrow(() => checkName('/etc/app/x.json'));
});

t.test('plain paths, missing parts, and links that stay inside the root', async (t) => {
  const { root, at } = tree(t);
  t.same(resolveWriteTarget(at('etc/app/new/x.json'), { root }), { file: at('etc/app/new/x.json') });
  t.equal(resolveWriteTarget(at('srv/data/file.json'), { root }).existing?.isFile(), true);
  symlinkSync('../srv/data', at('etc/rel'));
  symlinkSync(at('srv/data'), at('etc/abs'));
  symlinkSync('file.json', at('srv/data/alias.json'));
  t.equal(resolveWriteTarget(at('etc/rel/file.json'), { root }).file, at('srv/data/file.json'));
  t.equal(resolveWriteTarget(at('etc/abs/x.json'), { root }).file, at('srv/data/x.json'));
  t.equal(resolveWriteTarget(at('etc/rel/alias.json'), { root }).file, at('srv/data/file.json'), 'written through');
  const replaced = resolveWriteTarget(at('etc/rel/alias.json'), { root, last: 'replace' });
  t.equal(replaced.file, at('srv/data/alias.json'), "'replace': the link itself");
  t.ok(replaced.existing?.isSymbolicLink());
  t.equal(resolveWriteTarget(at('etc/rel'), { root, last: 'directory' }).file, at('srv/data'));
  t.equal(resolveWriteTarget(root, { root, last: 'directory' }).file, root);
});

t.test(
  'refused: out of the root by link (absolute, relative, a chain), dangling, loops, not a directory',
  async (t) => {
    const { base, root, at } = tree(t);
    const outside = path.join(base, 'outside');
    symlinkSync(outside, at('etc/out'));
    symlinkSync('../../outside', at('etc/up'));
    symlinkSync('up', at('etc/chain'));
    symlinkSync('/', at('etc/slash'));
    symlinkSync(at('srv/data/missing.json'), at('etc/dangling.json'));
    symlinkSync('loop2', at('etc/loop1'));
    symlinkSync('loop1', at('etc/loop2'));
    const refused = (p: string, pattern: RegExp, last?: 'replace' | 'directory') =>
      t.throws(
        () => resolveWriteTarget(at(p), { root, ...(last ? { last } : {}) }),
        { code: 'ERR_TARGET_REFUSED', message: pattern },
        p,
      );
    refused('etc/out/x', /etc\/out is a symbolic link to .*outside, outside /);
    refused('etc/up/x', /etc\/up is a symbolic link to .*outside, outside /);
    refused('etc/chain/x', /etc\/up is a symbolic link to/);
    refused('etc/slash/etc/passwd', /etc\/slash is a symbolic link to \/, outside /);
    refused('etc/out', /outside/, 'directory');
    refused('etc/dangling.json', /dangling\.json is a symbolic link to nothing/);
    refused('etc/loop1/x', /more than 40 symbolic links/);
    refused('srv/data/file.json/x', /file\.json is not a directory/);
    refused('srv/data', /is a directory/);
    t.throws(() => resolveWriteTarget(path.join(outside, 'x'), { root }), { message: /is outside/ });
    t.same(resolveWriteTarget('/etc/hostname.new', { root: '/' }).file, '/etc/hostname.new', 'root "/": anywhere');
  },
);
