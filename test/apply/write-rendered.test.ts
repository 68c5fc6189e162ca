import {
  chmodSync,
  chownSync,
  existsSync,
  lchownSync,
  lstatSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
} from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { DEFAULT_CONTROL } from '../../src/apply/control-file.js';
import {
  newPathCheckCache,
  resolveOutputPath,
  writeRendered,
  type RenderedFile,
} from '../../src/apply/write-rendered.js';
import { WriteBatch } from '../../src/util/write-batch.js';

const mode = (p: string) => statSync(p).mode & 0o7777;

/** One file through its own batch: its target looked at now, staged, then committed. */
async function writeOne(file: { target: string; body: string; control: RenderedFile['control'] }, root: string) {
  const batch = new WriteBatch();
  const existing = lstatSync(file.target, { throwIfNoEntry: false });
  const outcome = writeRendered({ ...file, existing }, root, batch);
  await batch.commit();
  return outcome;
}

t.test('resolveOutputPath joins under the root and refuses escapes', async (t) => {
  const root = t.testdir({ etc: {}, file: 'x', adir: { inner: {} } });
  t.same(resolveOutputPath(root, 'etc/a.conf'), { target: path.join(root, 'etc/a.conf'), existing: undefined });
  t.equal(resolveOutputPath(root, 'new/dir/f').target, path.join(root, 'new/dir/f'), 'missing directories are fine');
  t.ok(resolveOutputPath(root, 'file').existing?.isFile(), 'what is at the target comes with it');
  for (const bad of ['../x', 'etc/../../x', '/etc/passwd', '', 'a/..']) {
    t.throws(() => resolveOutputPath(root, bad), { code: 'ERR_UNSAFE_PATH' }, bad);
  }
  t.throws(() => resolveOutputPath(root, 'file/x'), { code: 'ERR_UNSAFE_PATH', message: /is not a directory/ });
  t.throws(() => resolveOutputPath(root, 'adir'), { code: 'ERR_UNSAFE_PATH', message: /is a directory/ });
});

t.test('within one run, a directory is looked at once, and nothing under an absent one is looked at', async (t) => {
  const root = t.testdir({ etc: { old: 'x' } });
  const cache = newPathCheckCache();
  t.same(resolveOutputPath(root, 'new/a/b/f1', cache), { target: path.join(root, 'new/a/b/f1'), existing: undefined });
  t.ok(
    cache.absent.has(path.join(root, 'new')) && cache.absent.has(path.join(root, 'new/a/b')),
    'the absent directories are remembered',
  );
  t.equal(resolveOutputPath(root, 'new/a/b/f2', cache).existing, undefined);
  t.ok(resolveOutputPath(root, 'etc/old', cache).existing?.isFile());
  t.ok(cache.checked.has(path.join(root, 'etc')));
  // A symlink planted after the check is not looked at again in the same run; the next run sees it.
  symlinkSync('/', path.join(root, 'late'));
  t.throws(() => resolveOutputPath(root, 'late/f', newPathCheckCache()), { code: 'ERR_UNSAFE_PATH' });
});

t.test('symlinked directories: inside the root is fine, outside is refused', async (t) => {
  const base = t.testdir({ out: { real: {} }, outside: {} });
  const root = path.join(base, 'out');
  symlinkSync(path.join(root, 'real'), path.join(root, 'inner-link'));
  symlinkSync(path.join(base, 'outside'), path.join(root, 'escape'));
  symlinkSync('/etc', path.join(root, 'etc'));
  symlinkSync(path.join(base, 'nowhere'), path.join(root, 'dangling'));
  t.equal(resolveOutputPath(root, 'inner-link/f').target, path.join(root, 'inner-link/f'));
  t.throws(() => resolveOutputPath(root, 'escape/f'), {
    code: 'ERR_UNSAFE_PATH',
    message: /leads outside the output root/,
  });
  t.throws(() => resolveOutputPath(root, 'etc/passwd'), { code: 'ERR_UNSAFE_PATH' });
  t.throws(() => resolveOutputPath(root, 'dangling/f'), { code: 'ERR_UNSAFE_PATH' });
});

t.test(
  'a symlinked directory inside the root that another user owns is refused, as for every file a deployment names',
  { skip: process.getuid?.() !== 0 && 'needs root to give a link to another user' },
  async (t) => {
    const base = t.testdir({ out: { real: {} } });
    const root = path.join(base, 'out');
    symlinkSync(path.join(root, 'real'), path.join(root, 'planted'));
    lchownSync(path.join(root, 'planted'), 65534, 65534);
    t.throws(() => resolveOutputPath(root, 'planted/f'), {
      code: 'ERR_UNSAFE_PATH',
      message: /planted is a symbolic link owned by user 65534 .*refusing to write/,
    });
  },
);

t.test('new files: 0644, parents created; rewrite truncates; identical content is unchanged', async (t) => {
  const root = t.testdir({});
  const target = path.join(root, 'a/b/c.conf');
  t.equal(await writeOne({ target, body: 'long content\n', control: DEFAULT_CONTROL }, root), 'written');
  t.equal(readFileSync(target, 'utf8'), 'long content\n');
  t.equal(mode(target), 0o644);
  t.equal(await writeOne({ target, body: 'short\n', control: DEFAULT_CONTROL }, root), 'written');
  t.equal(readFileSync(target, 'utf8'), 'short\n', 'no stale tail');
  const before = statSync(target);
  t.equal(await writeOne({ target, body: 'short\n', control: DEFAULT_CONTROL }, root), 'unchanged');
  t.equal(statSync(target).ino, before.ino, 'not replaced');
});

t.test('existing mode, owner and group are kept unless the control file says otherwise', async (t) => {
  const root = t.testdir({ keep: 'old', suid: 'old', owned: 'old' });
  chmodSync(path.join(root, 'keep'), 0o600);
  await writeOne({ target: path.join(root, 'keep'), body: 'new', control: DEFAULT_CONTROL }, root);
  t.equal(mode(path.join(root, 'keep')), 0o600);
  chmodSync(path.join(root, 'suid'), 0o4755);
  await writeOne({ target: path.join(root, 'suid'), body: 'new', control: DEFAULT_CONTROL }, root);
  t.equal(mode(path.join(root, 'suid')), 0o4755, 'setuid bit survives');
  t.equal(
    await writeOne(
      { target: path.join(root, 'keep'), body: 'new', control: { ...DEFAULT_CONTROL, mode: 0o640 } },
      root,
    ),
    'written',
    'same bytes, new mode',
  );
  t.equal(mode(path.join(root, 'keep')), 0o640);
  t.equal(
    await writeOne({ target: path.join(root, 'keep'), body: 'new', control: { ...DEFAULT_CONTROL, mode: 0 } }, root),
    'unchanged',
    'mode 0 ignored as upstream',
  );
  if (process.getuid?.() === 0) {
    chownSync(path.join(root, 'owned'), 65534, 65534);
    await writeOne({ target: path.join(root, 'owned'), body: 'new', control: DEFAULT_CONTROL }, root);
    t.match(statSync(path.join(root, 'owned')), { uid: 65534, gid: 65534 }, 'owner kept');
    await writeOne({ target: path.join(root, 'owned'), body: 'new', control: { ...DEFAULT_CONTROL, uid: 0 } }, root);
    t.match(statSync(path.join(root, 'owned')), { uid: 0, gid: 65534 }, 'owner from .oac, group kept');
  }
});

t.test('new directories are made by the batch, and removed again if it aborts', async (t) => {
  const root = t.testdir({ etc: {} });
  const batch = new WriteBatch();
  const file = (rel: string) => ({
    target: path.join(root, rel),
    existing: undefined,
    body: 'x',
    control: DEFAULT_CONTROL,
  });
  t.equal(writeRendered(file('new/deep/a'), root, batch), 'written');
  t.equal(writeRendered(file('new/b'), root, batch), 'written');
  t.equal(writeRendered(file('etc/c'), root, batch), 'written');
  t.ok(existsSync(path.join(root, 'new/deep')), 'made while staging, for the temp file');
  batch.abort();
  t.notOk(existsSync(path.join(root, 'new')), 'every directory the batch made is gone');
  t.ok(existsSync(path.join(root, 'etc')), 'one that was there stays');
  t.same(readdirSync(path.join(root, 'etc')), []);
});

t.test('allow_empty false deletes or skips an empty rendering', async (t) => {
  const root = t.testdir({ old: 'x' });
  const control = { ...DEFAULT_CONTROL, allowEmpty: false };
  t.equal(await writeOne({ target: path.join(root, 'old'), body: '', control }, root), 'deleted');
  t.notOk(existsSync(path.join(root, 'old')));
  t.equal(await writeOne({ target: path.join(root, 'new'), body: '', control }, root), 'skipped');
  t.notOk(existsSync(path.join(root, 'new')));
  t.equal(
    await writeOne({ target: path.join(root, 'empty'), body: '', control: DEFAULT_CONTROL }, root),
    'written',
    'allowed by default',
  );
  t.equal(readFileSync(path.join(root, 'empty'), 'utf8'), '');
});

t.test('a symlink at the target is replaced by a regular file, never written through', async (t) => {
  const base = t.testdir({ out: { real: 'inside' }, outside: 'precious' });
  const root = path.join(base, 'out');
  chmodSync(path.join(root, 'real'), 0o600);
  symlinkSync(path.join(root, 'real'), path.join(root, 'in-link'));
  symlinkSync(path.join(base, 'outside'), path.join(root, 'out-link'));
  await writeOne({ target: path.join(root, 'in-link'), body: 'new', control: DEFAULT_CONTROL }, root);
  t.ok(lstatSync(path.join(root, 'in-link')).isFile());
  t.equal(mode(path.join(root, 'in-link')), 0o600, 'mode of the link target inside the root');
  await writeOne({ target: path.join(root, 'out-link'), body: 'new', control: DEFAULT_CONTROL }, root);
  t.equal(readFileSync(path.join(base, 'outside'), 'utf8'), 'precious');
  t.equal(mode(path.join(root, 'out-link')), 0o644, 'nothing taken from outside the root');
});
