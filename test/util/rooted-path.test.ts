import path from 'node:path';
import fc from 'fast-check';
import t from 'tap';
import { createPathMapper, isInside } from '../../src/util/rooted-path.js';

t.test('without a root, paths are normalised and otherwise unchanged', async (t) => {
  for (const root of [undefined, '/']) {
    const m = createPathMapper(root);
    t.equal(m.root, '/');
    t.equal(m.map('/var/lib/os-collect-config'), '/var/lib/os-collect-config');
    t.equal(m.map('/etc//x/../os-collect-config.conf'), '/etc/os-collect-config.conf');
    t.equal(m.map('relative/path'), 'relative/path');
    t.equal(m.unmap('/var/lib/x'), '/var/lib/x');
  }
});

t.test('with a root, absolute paths move under it and map back', async (t) => {
  const m = createPathMapper('/tmp/root');
  t.equal(m.root, '/tmp/root');
  t.equal(m.map('/var/lib/os-collect-config'), '/tmp/root/var/lib/os-collect-config');
  t.equal(m.map('/'), '/tmp/root');
  t.equal(m.map('relative'), 'relative', 'relative paths stay relative');
  t.equal(m.unmap('/tmp/root/var/lib/os-collect-config'), '/var/lib/os-collect-config');
  t.equal(m.unmap('/tmp/root'), '/');
  t.equal(m.unmap('/elsewhere/x'), '/elsewhere/x', 'paths outside the root are shown as they are');
  t.equal(m.unmap('/tmp/rootish/x'), '/tmp/rootish/x');
});

t.test('an already mapped path is not mapped twice', async (t) => {
  const m = createPathMapper('/tmp/root');
  const once = m.map('/etc/x');
  t.equal(m.map(once), once);
  t.equal(m.map('/tmp/root'), '/tmp/root');
  t.equal(m.map('/tmp/rootish/x'), '/tmp/root/tmp/rootish/x', 'a sibling with the root as prefix is still mapped');
});

t.test('a relative root is resolved', async (t) => {
  const m = createPathMapper('some/dir');
  t.ok(m.root.startsWith('/'));
  t.ok(m.map('/etc').endsWith('/some/dir/etc'));
});

t.test('.. cannot climb out of the root', async (t) => {
  const m = createPathMapper('/tmp/root');
  t.equal(m.map('/../../etc/passwd'), '/tmp/root/etc/passwd');
  t.equal(m.map('/var/../../../etc'), '/tmp/root/etc');
});

t.test('isInside', async (t) => {
  t.ok(isInside('/a/b', '/a/b'));
  t.ok(isInside('/a/b', '/a/b/c'));
  t.ok(isInside('/a/b', '/a/b/c/../d'));
  t.ok(isInside('/a/b/', '/a/b/c'));
  t.ok(isInside('/a/b', '/a/b/..data'), 'a name starting with two dots is inside');
  t.ok(isInside('/a/b', '/a/b/...'));
  t.notOk(isInside('/a/b', '/a'));
  t.notOk(isInside('/a/b', '/a/bc'));
  t.notOk(isInside('/a/b', '/a/b/../c'));
  t.notOk(isInside('/a/b', '/a/b/../../etc'));
  t.notOk(isInside('/a/b', '/etc'));
  t.ok(isInside('/', '/a/../../etc'), 'every absolute path is inside /');
});

t.test('isInside: the shortcut for "/" agrees with resolving both paths', async (t) => {
  const segment = fc.constantFrom('a', 'b', '..', '.', '..data', '');
  const name = fc
    .tuple(fc.boolean(), fc.array(segment, { maxLength: 6 }))
    .map(([abs, s]) => (abs ? '/' : '') + s.join('/'));
  fc.assert(
    fc.property(fc.constantFrom('/', '/a', '/a/', 'a', '.'), name, (parent, child) => {
      const rel = path.relative(path.resolve(parent), path.resolve(child));
      const resolved = rel === '' || (rel !== '..' && !rel.startsWith('../') && !path.isAbsolute(rel));
      return isInside(parent, child) === resolved;
    }),
  );
  t.pass('agrees');
});
