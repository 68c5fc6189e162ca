import fs, { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t, { type Test } from 'tap';
import { DIRECT_WRITE_MAX_SIZE, readFileIfExists, tempPathFor, writeFileAtomic } from '../../src/util/atomic-write.js';

const modeOf = (file: string) => statSync(file).mode & 0o7777;

t.test('writes the contents with mode 0600 by default', async (t) => {
  const dir = t.testdir();
  const file = path.join(dir, 'out.json');
  await writeFileAtomic(file, '{"a": 1}');
  t.equal(readFileSync(file, 'utf8'), '{"a": 1}');
  t.equal(modeOf(file), 0o600);
  t.same(readdirSync(dir), ['out.json'], 'no temp file left behind');
});

t.test('the mode is exact whatever the umask', async (t) => {
  const old = process.umask(0o077);
  t.teardown(() => void process.umask(old));
  const dir = t.testdir();
  await writeFileAtomic(path.join(dir, 'wide'), 'x', { mode: 0o644 });
  t.equal(modeOf(path.join(dir, 'wide')), 0o644, 'umask 077 did not narrow 0644');
  process.umask(0o022);
  await writeFileAtomic(path.join(dir, 'group'), 'x', { mode: 0o660 });
  t.equal(modeOf(path.join(dir, 'group')), 0o660, 'umask 022 did not clear group write');
  await writeFileAtomic(path.join(dir, 'exec'), 'x', { mode: 0o750 });
  t.equal(modeOf(path.join(dir, 'exec')), 0o750);
});

t.test('replacing a file takes the new contents and the new mode', async (t) => {
  const dir = t.testdir({ target: 'old contents that are longer than the new ones' });
  const file = path.join(dir, 'target');
  await writeFileAtomic(file, 'new', { mode: 0o640 });
  t.equal(readFileSync(file, 'utf8'), 'new');
  t.equal(modeOf(file), 0o640);
  t.same(readdirSync(dir), ['target']);
});

t.test('binary data is written byte for byte', async (t) => {
  const dir = t.testdir();
  const file = path.join(dir, 'bin');
  const bytes = new Uint8Array([0, 1, 2, 255, 254, 10, 13]);
  await writeFileAtomic(file, bytes);
  t.same([...readFileSync(file)], [...bytes]);
});

t.test('a stream is written whole; one that fails leaves the target as it was and no temp file', async (t) => {
  const dir = t.testdir({ out: 'before' });
  const file = path.join(dir, 'out');
  async function* chunks(fail: boolean) {
    for (let i = 0; i < 3; i++) yield Buffer.alloc(40_000, 97 + i);
    if (fail) throw new Error('the source broke');
  }
  await t.rejects(writeFileAtomic(file, chunks(true)), /the source broke/);
  t.equal(readFileSync(file, 'utf8'), 'before');
  t.same(readdirSync(dir), ['out'], 'no temp file left behind');
  await writeFileAtomic(file, chunks(false), { mode: 0o640 });
  const written = readFileSync(file);
  t.equal(written.length, 120_000);
  t.equal(written.toString('latin1', 79_999, 80_001), 'bc', 'the chunks in their order');
  t.equal(modeOf(file), 0o640);
});

t.test('uid and gid are applied (running as root)', { skip: process.getuid?.() !== 0 && 'needs root' }, async (t) => {
  const dir = t.testdir();
  const file = path.join(dir, 'owned');
  await writeFileAtomic(file, 'x', { uid: 65534, gid: 65534 });
  t.equal(statSync(file).uid, 65534);
  t.equal(statSync(file).gid, 65534);
  await writeFileAtomic(file, 'y', { gid: 0 });
  t.equal(statSync(file).uid, 0, 'a new file is owned by the writer unless uid is given');
  t.equal(statSync(file).gid, 0);
});

t.test(
  'setuid and setgid bits survive a change of owner (chown clears them: it goes before chmod)',
  { skip: process.getuid?.() !== 0 && 'needs root' },
  async (t) => {
    const file = path.join(t.testdir(), 'setuid');
    await writeFileAtomic(file, 'x', { mode: 0o6750, uid: 1, gid: 1 });
    t.equal(modeOf(file), 0o6750);
    t.equal(statSync(file).uid, 1);
  },
);

t.test('a missing directory fails without creating anything, unless mkdirMode is given', async (t) => {
  const dir = t.testdir();
  const file = path.join(dir, 'missing/sub/file');
  await t.rejects(writeFileAtomic(file, 'x'), { code: 'ENOENT' });
  t.same(readdirSync(dir), []);
  await writeFileAtomic(file, 'x', { mkdirMode: 0o700 });
  t.equal(readFileSync(file, 'utf8'), 'x');
  t.equal(modeOf(path.join(dir, 'missing')), 0o700);
  t.equal(modeOf(path.join(dir, 'missing/sub')), 0o700);
});

t.test('a path under a regular file fails with ENOTDIR and leaves no debris', async (t) => {
  const dir = t.testdir({ plain: 'i am a file' });
  await t.rejects(writeFileAtomic(path.join(dir, 'plain/file'), 'x'), { code: 'ENOTDIR' });
  t.same(readdirSync(dir), ['plain']);
  t.equal(readFileSync(path.join(dir, 'plain'), 'utf8'), 'i am a file');
});

t.test('a failure after the temp file exists removes the temp file', async (t) => {
  // The target is a non-empty directory: the temp file is written, then rename() fails.
  const dir = t.testdir({ target: { inside: 'x' } });
  await t.rejects(writeFileAtomic(path.join(dir, 'target'), 'data'));
  t.same(readdirSync(dir), ['target'], 'only the directory remains');
  t.same(readdirSync(path.join(dir, 'target')), ['inside']);
});

t.test('concurrent writers never leave a torn file or temp debris', async (t) => {
  const dir = t.testdir();
  const file = path.join(dir, 'race');
  const payloads = Array.from({ length: 20 }, (_, i) => `${String(i).repeat(1000)}`);
  await Promise.all(payloads.map((p) => writeFileAtomic(file, p)));
  t.ok(payloads.includes(readFileSync(file, 'utf8')), 'the file holds exactly one writer’s data');
  t.same(readdirSync(dir), ['race']);
});

t.test('readFileIfExists', async (t) => {
  const dir = t.testdir({ present: 'héllo', sub: {} });
  t.equal(await readFileIfExists(path.join(dir, 'present')), 'héllo');
  t.equal(await readFileIfExists(path.join(dir, 'absent')), undefined, 'missing file is undefined');
  await t.rejects(readFileIfExists(path.join(dir, 'sub')), { code: 'EISDIR' }, 'other errors propagate');
  writeFileSync(path.join(dir, 'empty'), '');
  t.equal(await readFileIfExists(path.join(dir, 'empty')), '', 'an empty file is the empty string, not undefined');
  mkdirSync(path.join(dir, 'd'));
  t.equal(await readFileIfExists(path.join(dir, 'd/absent')), undefined);
});

t.test('temp names sit beside their target, hidden, distinct on every call', async (t) => {
  const names = Array.from({ length: 3 }, () => tempPathFor('/etc/app/app.conf'));
  for (const name of names) t.match(name, new RegExp(`^/etc/app/\\.app\\.conf\\.tmp-${process.pid}-\\d+-[0-9a-f]+$`));
  t.equal(new Set(names).size, 3);
  t.match(tempPathFor('bare'), /^\.bare\.tmp-/, 'a bare name stays in the current directory');
});

/** Which rename each write made: direct (fs.renameSync) or through the thread pool (fs.promises.rename). */
function recordRenames(t: Test): string[] {
  const seen: string[] = [];
  const renameSync = fs.renameSync.bind(fs);
  const rename = fs.promises.rename.bind(fs.promises);
  fs.renameSync = (from, to) => {
    seen.push('direct');
    renameSync(from, to);
  };
  fs.promises.rename = async (from, to) => {
    seen.push('pool');
    await rename(from, to);
  };
  t.teardown(() => {
    fs.renameSync = renameSync;
    fs.promises.rename = rename;
  });
  return seen;
}

t.test(
  'small files are written with direct calls, larger ones through the thread pool, to the same result',
  async (t) => {
    const seen = recordRenames(t);
    const dir = t.testdir();
    const small = 'x'.repeat(DIRECT_WRITE_MAX_SIZE);
    const large = Buffer.alloc(DIRECT_WRITE_MAX_SIZE + 1, 0x79);
    await writeFileAtomic(path.join(dir, 'small'), small, { mode: 0o640 });
    await writeFileAtomic(path.join(dir, 'large'), large, { mode: 0o640 });
    t.same(seen, ['direct', 'pool']);
    t.equal(readFileSync(path.join(dir, 'small'), 'utf8'), small);
    t.same(readFileSync(path.join(dir, 'large')), large);
    t.equal(modeOf(path.join(dir, 'small')), 0o640);
    t.equal(modeOf(path.join(dir, 'large')), 0o640);
    t.same(readdirSync(dir).sort(), ['large', 'small'], 'no temp file left behind');
  },
);

t.test('either way, a failed rename leaves the target as it was and no temp file', async (t) => {
  for (const data of ['small', Buffer.alloc(DIRECT_WRITE_MAX_SIZE + 1)]) {
    const dir = t.testdir({ target: { inside: 'x' } });
    await t.rejects(writeFileAtomic(path.join(dir, 'target'), data), { code: /^(EISDIR|ENOTEMPTY|EEXIST)$/ });
    t.same(readdirSync(dir), ['target']);
    t.same(readdirSync(path.join(dir, 'target')), ['inside']);
  }
});
