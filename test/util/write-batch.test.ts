import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { onePerFilesystem, SYNCFS_MIN_FILES, WriteBatch, type SyncfsRunner } from '../../src/util/write-batch.js';

const modeOf = (file: string) => statSync(file).mode & 0o7777;
const bytes = (s: string) => Buffer.from(s, 'utf8');
/** Every name in a tree, temp files included (they start with a dot). */
const allNames = (dir: string): string[] => readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort();

/** A syncfs runner that records its calls and answers as told. */
function recordingSyncfs(answer: boolean): { run: SyncfsRunner; calls: string[][] } {
  const calls: string[][] = [];
  return { calls, run: async (paths) => (calls.push([...paths]), answer) };
}

t.test('nothing under the targets changes until commit; then every file is in place with its mode', async (t) => {
  const dir = t.testdir({ keep: 'old keep', gone: 'old gone' });
  const batch = new WriteBatch();
  batch.stage(path.join(dir, 'keep'), bytes('new keep'), { mode: 0o640 });
  batch.stage(path.join(dir, 'fresh'), bytes('fresh'), { mode: 0o600 });
  batch.remove(path.join(dir, 'gone'));
  t.equal(readFileSync(path.join(dir, 'keep'), 'utf8'), 'old keep', 'target untouched while staged');
  t.notOk(existsSync(path.join(dir, 'fresh')));
  t.ok(existsSync(path.join(dir, 'gone')), 'removal waits for commit');
  t.equal(allNames(dir).filter((n) => n.startsWith('.')).length, 2, 'two temp files beside their targets');
  await batch.commit();
  t.equal(readFileSync(path.join(dir, 'keep'), 'utf8'), 'new keep');
  t.equal(modeOf(path.join(dir, 'keep')), 0o640);
  t.equal(modeOf(path.join(dir, 'fresh')), 0o600);
  t.notOk(existsSync(path.join(dir, 'gone')));
  t.same(allNames(dir), ['fresh', 'keep'], 'no temp file left');
});

t.test('abort removes every temp file and replaces nothing', async (t) => {
  const dir = t.testdir({ a: 'old a' });
  const batch = new WriteBatch();
  batch.stage(path.join(dir, 'a'), bytes('new a'), { mode: 0o644 });
  batch.stage(path.join(dir, 'b'), bytes('new b'), { mode: 0o644 });
  batch.remove(path.join(dir, 'a'));
  batch.abort();
  t.same(allNames(dir), ['a']);
  t.equal(readFileSync(path.join(dir, 'a'), 'utf8'), 'old a');
  t.throws(() => batch.stage(path.join(dir, 'c'), bytes('c'), { mode: 0o644 }), /already committed or aborted/);
});

t.test(
  'a stage that fails (directory not writable) leaves earlier temp files for abort to remove',
  { skip: process.getuid?.() === 0 && 'root ignores directory permissions' },
  async (t) => {
    const dir = t.testdir({ ok: {}, locked: {} });
    chmodSync(path.join(dir, 'locked'), 0o555);
    t.teardown(() => chmodSync(path.join(dir, 'locked'), 0o755));
    const batch = new WriteBatch();
    batch.stage(path.join(dir, 'ok/f'), bytes('x'), { mode: 0o644 });
    t.throws(() => batch.stage(path.join(dir, 'locked/f'), bytes('x'), { mode: 0o644 }), { code: 'EACCES' });
    batch.abort();
    t.same(readdirSync(path.join(dir, 'ok')), []);
  },
);

t.test(
  'setuid and setgid bits survive a change of owner (chown clears them; chmod comes after)',
  { skip: process.getuid?.() !== 0 && 'needs root' },
  async (t) => {
    const dir = t.testdir({});
    const batch = new WriteBatch();
    batch.stage(path.join(dir, 'tool'), bytes('#!/bin/sh\n'), { mode: 0o6755, uid: 65534, gid: 65534 });
    await batch.commit();
    t.match(statSync(path.join(dir, 'tool')), { uid: 65534, gid: 65534 });
    t.equal(modeOf(path.join(dir, 'tool')), 0o6755);
  },
);

t.test(
  'small batches fsync file by file; large ones call syncfs once before the renames; directories are fsynced',
  async (t) => {
    const dir = t.testdir({});
    const small = recordingSyncfs(true);
    const few = new WriteBatch(small.run);
    for (let i = 0; i < SYNCFS_MIN_FILES - 1; i++) few.stage(path.join(dir, `s${i}`), bytes('x'), { mode: 0o644 });
    t.same(await few.commit(), { files: 'fsync', directories: 'fsync' });
    t.same(small.calls, [], 'no syncfs for a small batch');

    const large = recordingSyncfs(true);
    const many = new WriteBatch(large.run);
    for (let d = 0; d < SYNCFS_MIN_FILES; d++) {
      mkdirSync(path.join(dir, `d${d}`));
      many.stage(path.join(dir, `d${d}`, 'f'), bytes(`file ${d}`), { mode: 0o644 });
    }
    t.same(await many.commit(), { files: 'syncfs', directories: 'fsync' });
    t.same(large.calls, [[path.join(dir, 'd0')]], 'one directory per filesystem, once, before the renames');
    t.equal(readFileSync(path.join(dir, 'd15/f'), 'utf8'), 'file 15');
  },
);

t.test('links: staged beside their target, renamed over it at commit, removed by abort, never flushed', async (t) => {
  const dir = t.testdir({ old: 'a file a link replaces' });
  const syncfs = recordingSyncfs(true);
  const batch = new WriteBatch(syncfs.run);
  // A link to nothing: flushing it by its path would follow it and fail.
  batch.stageLink(path.join(dir, 'old'), '/nonexistent/target');
  batch.stageLink(path.join(dir, 'new'), 'old');
  t.equal(readFileSync(path.join(dir, 'old'), 'utf8'), 'a file a link replaces', 'target untouched while staged');
  t.same(await batch.commit(), { files: 'none', directories: 'fsync' }, 'no data to flush for links');
  t.equal(readlinkSync(path.join(dir, 'old')), '/nonexistent/target');
  t.equal(readlinkSync(path.join(dir, 'new')), 'old');
  t.same(allNames(dir), ['new', 'old'], 'no temp link left');

  const aborted = new WriteBatch();
  aborted.stageLink(path.join(dir, 'gone'), 'old');
  aborted.abort();
  t.same(allNames(dir), ['new', 'old'], 'abort removes the staged link');
});

t.test('stageFrom: a body its writer made beside the target, given its mode; unstage takes it back', async (t) => {
  const dir = t.testdir({ big: 'old big', same: 'same' });
  const batch = new WriteBatch(recordingSyncfs(true).run);
  const temp = await batch.stageFrom(
    path.join(dir, 'big'),
    async (to) => writeFileSync(to, 'new big', { flag: 'wx', mode: 0o600 }),
    {
      mode: 0o4755,
    },
  );
  t.equal(path.dirname(temp), dir, 'beside its target');
  t.equal(modeOf(temp), 0o4755, 'the mode set on the written file, setuid included');
  await batch.stageFrom(path.join(dir, 'same'), async (to) => writeFileSync(to, 'same', { flag: 'wx' }), {
    mode: 0o644,
  });
  batch.unstage(path.join(dir, 'same'));
  t.equal(readFileSync(path.join(dir, 'big'), 'utf8'), 'old big', 'nothing replaced before commit');
  await batch.commit();
  t.equal(readFileSync(path.join(dir, 'big'), 'utf8'), 'new big');
  t.equal(modeOf(path.join(dir, 'big')), 0o4755);
  t.same(allNames(dir), ['big', 'same'], 'the unstaged temp file is gone, the file it was for untouched');

  const failing = new WriteBatch();
  const written = failing.stageFrom(
    path.join(dir, 'big'),
    async (to) => {
      writeFileSync(to, 'half', { flag: 'wx' });
      throw new Error('the download failed');
    },
    { mode: 0o644 },
  );
  await t.rejects(written, /the download failed/);
  failing.abort();
  t.same(allNames(dir), ['big', 'same'], 'abort removes what the failed writer left');
});

t.test("a link's owner is set on the link itself", { skip: process.getuid?.() !== 0 && 'needs root' }, async (t) => {
  const dir = t.testdir({ file: 'x' });
  const batch = new WriteBatch();
  batch.stageLink(path.join(dir, 'link'), 'file', { uid: 65534, gid: 65534 });
  await batch.commit();
  t.match(lstatSync(path.join(dir, 'link')), { uid: 65534, gid: 65534 });
  t.match(statSync(path.join(dir, 'file')), { uid: 0 }, 'what it points to keeps its owner');
});

t.test('the mode is exact whatever the umask: open() modes the umask cut down are set again', async (t) => {
  const dir = t.testdir({});
  const previous = process.umask(0o077);
  t.teardown(() => void process.umask(previous));
  const batch = new WriteBatch();
  batch.stage(path.join(dir, 'a'), bytes('a'), { mode: 0o644 });
  batch.stage(path.join(dir, 'b'), bytes('b'), { mode: 0o644 });
  batch.stage(path.join(dir, 'c'), bytes('c'), { mode: 0o600 });
  batch.stage(path.join(dir, 'd'), bytes('d'), { mode: 0o1755 });
  await batch.commit();
  t.same(
    ['a', 'b', 'c', 'd'].map((f) => modeOf(path.join(dir, f))),
    [0o644, 0o644, 0o600, 0o1755],
  );
  process.umask(0o022);
  const second = new WriteBatch();
  second.stage(path.join(dir, 'e'), bytes('e'), { mode: 0o664 });
  second.stage(path.join(dir, 'f'), bytes('f'), { mode: 0o664 });
  await second.commit();
  t.same(
    ['e', 'f'].map((f) => modeOf(path.join(dir, f))),
    [0o664, 0o664],
    'group write bit the umask removes',
  );
});

t.test(
  'after the first file of a mode, the rest of that mode take the one-call write; contents and modes are exact',
  async (t) => {
    const dir = t.testdir({ old: 'old' });
    const previous = process.umask(0o022);
    t.teardown(() => void process.umask(previous));
    const batch = new WriteBatch();
    const names = ['a', 'b', 'c', 'old'];
    names.forEach((n, i) =>
      batch.stage(path.join(dir, n), i % 2 ? bytes(`bytes ${n}`) : `text ${n} \u00e9`, { mode: 0o640 }),
    );
    t.equal(allNames(dir).filter((n) => n.startsWith('.')).length, 4, 'four temp files');
    await batch.commit();
    t.same(
      names.map((n) => readFileSync(path.join(dir, n), 'utf8')),
      ['text a \u00e9', 'bytes b', 'text c \u00e9', 'bytes old'],
    );
    t.same(
      names.map((n) => modeOf(path.join(dir, n))),
      [0o640, 0o640, 0o640, 0o640],
    );
  },
);

t.test('when syncfs is not available (old coreutils, no sync binary) the batch falls back to fsync', async (t) => {
  const dir = t.testdir({});
  const refusing = recordingSyncfs(false);
  const batch = new WriteBatch(refusing.run);
  for (let i = 0; i < SYNCFS_MIN_FILES; i++) batch.stage(path.join(dir, `f${i}`), bytes('x'), { mode: 0o644 });
  t.same(await batch.commit(), { files: 'fsync', directories: 'fsync' });
  t.equal(refusing.calls.length, 1, 'asked once for the files; one directory is below the threshold');
  t.equal(allNames(dir).length, SYNCFS_MIN_FILES);
});

t.test('the real `sync -f` runs (a large batch, no runner injected)', async (t) => {
  const dir = t.testdir({});
  const batch = new WriteBatch();
  for (let i = 0; i < SYNCFS_MIN_FILES * 2; i++)
    batch.stage(path.join(dir, `f${i}`), bytes(`body ${i}`), { mode: 0o644 });
  const report = await batch.commit();
  t.equal(report.files, 'syncfs', 'coreutils sync -f succeeded');
  t.equal(readFileSync(path.join(dir, 'f31'), 'utf8'), 'body 31');
});

t.test('a rename that fails removes the remaining temp files and reports the error', async (t) => {
  const dir = t.testdir({ blocker: { inside: 'x' } });
  const batch = new WriteBatch();
  batch.stage(path.join(dir, 'first'), bytes('1'), { mode: 0o644 });
  // Renaming a file over a non-empty directory fails (EISDIR / ENOTEMPTY).
  batch.stage(path.join(dir, 'blocker'), bytes('2'), { mode: 0o644 });
  batch.stage(path.join(dir, 'third'), bytes('3'), { mode: 0o644 });
  await t.rejects(batch.commit(), { code: /EISDIR|ENOTEMPTY|EEXIST/ });
  t.same(
    allNames(dir),
    ['blocker', 'blocker/inside', 'first'],
    'renames before the failure stay; no temp file is left',
  );
});

t.test(
  'a commit that fails before its first rename removes the directories the batch made, and one after keeps them',
  async (t) => {
    const dir = t.testdir({ blocker: { inside: 'x' } });
    // fsync of a temp file that is gone fails (ENOENT): the flush, before any rename.
    const early = new WriteBatch();
    early.ensureDirectory(path.join(dir, 'new/deeper'));
    early.stage(path.join(dir, 'new/deeper/f'), bytes('x'), { mode: 0o644 });
    for (const name of readdirSync(path.join(dir, 'new/deeper'))) unlinkSync(path.join(dir, 'new/deeper', name));
    await t.rejects(early.commit(), { code: 'ENOENT' });
    t.notOk(existsSync(path.join(dir, 'new')), 'no directory left behind');
    // A rename that fails after another succeeded: the renamed file needs its directory.
    const late = new WriteBatch();
    late.ensureDirectory(path.join(dir, 'made'));
    late.stage(path.join(dir, 'made/first'), bytes('1'), { mode: 0o644 });
    late.stage(path.join(dir, 'blocker'), bytes('2'), { mode: 0o644 });
    await t.rejects(late.commit(), { code: /EISDIR|ENOTEMPTY|EEXIST/ });
    t.equal(readFileSync(path.join(dir, 'made/first'), 'utf8'), '1');
  },
);

t.test('onePerFilesystem keeps one directory per device', async (t) => {
  const dir = t.testdir({ a: {}, b: {} });
  t.same(onePerFilesystem([path.join(dir, 'a'), path.join(dir, 'b')]), [path.join(dir, 'a')]);
  const other = ['/proc', '/dev/shm'].filter((p) => existsSync(p) && statSync(p).dev !== statSync(dir).dev);
  t.equal(
    onePerFilesystem([path.join(dir, 'a'), ...other]).length,
    1 + new Set(other.map((p) => statSync(p).dev)).size,
  );
  t.same(onePerFilesystem([path.join(dir, 'missing')]), [], 'a vanished directory is skipped');
});
