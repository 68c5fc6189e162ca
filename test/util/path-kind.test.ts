import { chmodSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { isDirectory, isRegularFile } from '../../src/util/path-kind.js';

t.test('regular files and directories, links followed; anything else, missing or dangling is false', async (t) => {
  const dir = t.testdir({ file: 'x', sub: {} });
  symlinkSync('file', path.join(dir, 'to-file'));
  symlinkSync('sub', path.join(dir, 'to-sub'));
  symlinkSync('nowhere', path.join(dir, 'dangling'));
  const at = (n: string) => path.join(dir, n);
  t.equal(isRegularFile(at('file')), true);
  t.equal(isRegularFile(at('to-file')), true, 'through a link');
  t.equal(isRegularFile(at('sub')), false);
  t.equal(isRegularFile(at('dangling')), false);
  t.equal(isRegularFile(at('missing')), false);
  t.equal(isDirectory(at('sub')), true);
  t.equal(isDirectory(at('to-sub')), true, 'through a link');
  t.equal(isDirectory(at('file')), false);
  t.equal(isDirectory(at('dangling')), false);
  t.equal(isDirectory(at('file/below')), false, 'ENOTDIR is false, not an error');
});

t.test(
  'a path that cannot be looked at is false, not an error',
  { skip: process.getuid?.() === 0 ? 'root looks everywhere' : false },
  async (t) => {
    const dir = t.testdir({});
    mkdirSync(path.join(dir, 'locked'));
    writeFileSync(path.join(dir, 'locked/file'), 'x');
    chmodSync(path.join(dir, 'locked'), 0o000);
    t.teardown(() => chmodSync(path.join(dir, 'locked'), 0o700));
    t.equal(isRegularFile(path.join(dir, 'locked/file')), false);
    t.equal(isDirectory(path.join(dir, 'locked')), true, 'the locked directory itself is still a directory');
  },
);
