import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { META_LIST_FILE, MetadataCache } from '../../src/cache/metadata-cache.js';
import { CacheWriteError, ReservedNameError, UnsafeNameError } from '../../src/errors.js';
import { captureLog } from '../helpers/log-capture.js';

const modeOf = (file: string) => statSync(file).mode & 0o7777;
const read = (file: string) => readFileSync(file, 'utf8');

function setup(t: { testdir(): string }) {
  const base = t.testdir();
  const dir = path.join(base, 'var/lib/os-collect-config');
  const captured = captureLog();
  return { base, dir, captured, cache: new MetadataCache(dir, captured.log) };
}

t.test('first store: <key>.json and .orig, 1-space indent, no final newline, mode 0600; changed', async (t) => {
  const { dir, cache } = setup(t);
  const res = await cache.store('10-base.json', { a: 1, nested: { x: 'y' } });
  t.same(res, { changed: true, path: path.join(dir, '10-base.json.json') });
  const expected = '{\n "a": 1,\n "nested": {\n  "x": "y"\n }\n}';
  t.equal(read(res.path), expected, 'byte-identical to the file upstream writes');
  t.equal(Buffer.byteLength(read(res.path)), 39, 'the 39 bytes upstream wrote');
  t.equal(read(`${res.path}.orig`), expected);
  t.equal(modeOf(res.path), 0o600);
  t.equal(modeOf(`${res.path}.orig`), 0o600);
  t.notOk(existsSync(`${res.path}.last`), '.last only on commit');
  t.equal(modeOf(dir), 0o700, 'cache directory created with parents, mode 0700');
  t.same(readdirSync(dir).sort(), ['10-base.json.json', '10-base.json.json.orig'], 'no temp files');
});

t.test('non-ASCII is escaped and key order kept, as json.dumps does', async (t) => {
  const { cache } = setup(t);
  const res = await cache.store('k', { zeta: 'é', alpha: ['😀'] });
  t.equal(read(res.path), '{\n "zeta": "\\u00e9",\n "alpha": [\n  "\\ud83d\\ude00"\n ]\n}');
});

t.test('commit copies .json to .last (0600); unchanged afterwards', async (t) => {
  const { cache } = setup(t);
  const { path: file } = await cache.store('heat_local', { a: 1 });
  await cache.commit('heat_local');
  t.equal(read(`${file}.last`), read(file));
  t.equal(modeOf(`${file}.last`), 0o600);
  t.same(await cache.store('heat_local', { a: 1 }), { changed: false, path: file });
});

t.test('changed means "differs from .last", until a commit', async (t) => {
  const { cache } = setup(t);
  const { path: file } = await cache.store('k', { a: 1 });
  await cache.commit('k');
  t.equal((await cache.store('k', { a: 2 })).changed, true);
  t.equal(read(file), '{\n "a": 2\n}', '.json holds the new data even before a commit');
  t.equal(read(`${file}.last`), '{\n "a": 1\n}', '.last still the committed data');
  t.equal((await cache.store('k', { a: 2 })).changed, true, 'still changed: the command has not succeeded yet');
  t.equal((await cache.store('k', { a: 1 })).changed, false, 'reverting to the committed data is unchanged');
  await cache.store('k', { a: 2 });
  await cache.commit('k');
  t.equal((await cache.store('k', { a: 2 })).changed, false);
  t.equal(read(`${file}.orig`), '{\n "a": 1\n}', '.orig keeps the very first value');
});

t.test('reordered keys are unchanged, but the file takes the new order', async (t) => {
  const { cache } = setup(t);
  const { path: file } = await cache.store('k', { a: 1, b: { x: 1, y: 2 } });
  await cache.commit('k');
  t.equal((await cache.store('k', { b: { y: 2, x: 1 }, a: 1 })).changed, false);
  t.equal(read(file), '{\n "b": {\n  "y": 2,\n  "x": 1\n },\n "a": 1\n}');
});

t.test('B14 fixed: 1 -> true is a change (upstream saw none)', async (t) => {
  const { cache } = setup(t);
  await cache.store('k', { flag: 1 });
  await cache.commit('k');
  t.equal((await cache.store('k', { flag: true })).changed, true);
});

t.test('an unchanged value is not rewritten (same inode and mtime)', async (t) => {
  const { cache } = setup(t);
  const { path: file } = await cache.store('k', { a: 1 });
  const before = statSync(file);
  await new Promise((r) => setTimeout(r, 15));
  await cache.store('k', { a: 1 });
  const after = statSync(file);
  t.equal(after.ino, before.ino);
  t.equal(after.mtimeMs, before.mtimeMs);
});

t.test('.orig is written once and never updated', async (t) => {
  const { cache } = setup(t);
  const { path: file } = await cache.store('k', [1]);
  await cache.store('k', [2]);
  await cache.commit('k');
  await cache.store('k', [3]);
  t.equal(read(`${file}.orig`), '[\n 1\n]');
});

t.test('a missing .last (never committed) is changed; a missing .orig is rewritten and changed', async (t) => {
  const { cache } = setup(t);
  const { path: file } = await cache.store('k', 'v');
  t.equal((await cache.store('k', 'v')).changed, true, 'no .last yet');
  await cache.commit('k');
  t.equal((await cache.store('k', 'v')).changed, false);
  writeFileSync(`${file}.orig`, '');
  t.equal((await cache.store('k', 'v')).changed, false, 'an existing .orig is not touched');
});

t.test('a corrupt .last counts as changed with a warning, not a crash (B8)', async (t) => {
  const { cache, captured } = setup(t);
  const { path: file } = await cache.store('k', { a: 1 });
  await cache.commit('k');
  writeFileSync(`${file}.last`, '{"a": 1');
  t.equal((await cache.store('k', { a: 1 })).changed, true);
  const warning = captured.lines.find((l) => l.level === 'warn');
  t.match(warning, {
    code: 'ERR_CACHE_CORRUPT',
    key: 'k',
    file: `${file}.last`,
    msg: 'committed cache file is not valid JSON; treating the key as changed',
  });
  await cache.commit('k');
  t.equal((await cache.store('k', { a: 1 })).changed, false, 'the next commit repairs it');
});

t.test('commit of a key never stored does nothing', async (t) => {
  const { dir, cache } = setup(t);
  await cache.ensureDir();
  await cache.commit('never');
  t.same(readdirSync(dir), []);
});

t.test('storeMetaList: compact JSON list of paths in order, duplicates kept, 0600', async (t) => {
  const { dir, cache } = setup(t);
  await cache.ensureDir();
  const files = [`${dir}/10-base.json.json`, `${dir}/20-more.json`, `${dir}/20-more.json`];
  const target = await cache.storeMetaList(files);
  t.equal(target, path.join(dir, META_LIST_FILE));
  t.equal(META_LIST_FILE, 'os_config_files.json');
  t.equal(read(target), `["${dir}/10-base.json.json", "${dir}/20-more.json", "${dir}/20-more.json"]`);
  t.equal(modeOf(target), 0o600);
  await cache.storeMetaList([]);
  t.equal(read(target), '[]');
});

t.test('backup copies the cache as it is before the commit, replacing the old backup', async (t) => {
  const { base, dir, cache } = setup(t);
  const backupDir = path.join(base, 'var/run/os-collect-config');
  const a = await cache.store('a', { v: 1 });
  const b = await cache.store('b', { v: 2 });
  await cache.storeMetaList([a.path, b.path]);
  writeFileSync(path.join(dir, '.a.json.tmp-1-abcd'), 'in-flight temp file');
  await cache.backup(backupDir);
  await cache.commit('a');
  await cache.commit('b');
  t.same(
    readdirSync(backupDir).sort(),
    ['a.json', 'a.json.orig', 'b.json', 'b.json.orig', 'os_config_files.json'],
    'no .last (the backup is taken before a commit, as upstream takes it), no temp files',
  );
  t.equal(read(path.join(backupDir, 'a.json')), read(a.path));
  t.equal(modeOf(path.join(backupDir, 'a.json')), 0o600, 'modes kept');

  mkdirSync(path.join(backupDir, 'stale-dir'));
  writeFileSync(path.join(backupDir, 'stale'), 'x');
  await cache.backup(backupDir);
  t.same(
    readdirSync(backupDir).sort(),
    ['a.json', 'a.json.last', 'a.json.orig', 'b.json', 'b.json.last', 'b.json.orig', 'os_config_files.json'],
    'a full mirror: stale entries gone, now with .last',
  );
  t.same(readdirSync(path.dirname(backupDir)), ['os-collect-config'], 'no staging directory left');
});

t.test('backup without a cache directory removes the backup', async (t) => {
  const { base, cache } = setup(t);
  const backupDir = path.join(base, 'backup');
  mkdirSync(backupDir);
  writeFileSync(path.join(backupDir, 'old.json'), '{}');
  await cache.backup(backupDir);
  t.notOk(existsSync(backupDir));
});

t.test('backup failure is a CacheWriteError and leaves no staging directory', async (t) => {
  const { base, cache } = setup(t);
  await cache.store('a', 1);
  writeFileSync(path.join(base, 'plain'), 'a regular file');
  const backupDir = path.join(base, 'plain/backup');
  await t.rejects(cache.backup(backupDir), CacheWriteError);
  t.same(readdirSync(base).sort(), ['plain', 'var']);
});

t.test('unsafe keys are rejected with UnsafeNameError before anything is written (B7)', async (t) => {
  const { base, dir, cache } = setup(t);
  for (const key of ['../escaped', 'a/b', '.hidden', '', '..']) {
    await t.rejects(cache.store(key, { x: 1 }), UnsafeNameError, JSON.stringify(key));
    await t.rejects(cache.commit(key), UnsafeNameError);
    t.throws(() => cache.pathOf(key), UnsafeNameError);
  }
  t.notOk(existsSync(dir), 'the cache directory was not even created');
  t.same(readdirSync(base), []);
});

t.test('a write failure is a CacheWriteError and nothing is half-written', async (t) => {
  const base = t.testdir({ plain: 'a regular file, not a directory' });
  const cache = new MetadataCache(path.join(base, 'plain/cache'), captureLog().log);
  const err = await cache.store('k', { a: 1 }).catch((e: unknown) => e);
  t.ok(err instanceof CacheWriteError);
  t.equal((err as CacheWriteError).code, 'ERR_CACHE_WRITE');
  t.match((err as Error).message, /cannot create cache directory .*plain\/cache: ENOTDIR/);
  await t.rejects(cache.storeMetaList(['x']), CacheWriteError);
  t.same(readdirSync(base), ['plain']);
  t.equal(read(path.join(base, 'plain')), 'a regular file, not a directory');
});

t.test('a failure while writing a key keeps the previous file whole and leaves no temp files', async (t) => {
  const { dir, cache } = setup(t);
  const { path: file } = await cache.store('k', { a: 1 });
  await cache.commit('k');
  // Make the .last target a non-empty directory: commit cannot replace it.
  rmSync(`${file}.last`);
  mkdirSync(`${file}.last/inner`, { recursive: true });
  await cache.store('k', { a: 2 });
  const err = await cache.commit('k').catch((e: unknown) => e);
  t.ok(err instanceof CacheWriteError, 'commit failure is a CacheWriteError');
  t.match((err as Error).message, /cannot commit cache file/);
  t.equal(read(file), '{\n "a": 2\n}', 'the new .json is whole');
  t.same(
    readdirSync(dir).filter((n) => n.startsWith('.')),
    [],
    'no temp debris',
  );
});

t.test('a .json path that cannot be read is a CacheWriteError', async (t) => {
  const { dir, cache } = setup(t);
  mkdirSync(path.join(dir, 'k.json'), { recursive: true });
  await t.rejects(cache.store('k', 1), CacheWriteError);
  await t.rejects(cache.commit('k'), CacheWriteError);
});

t.test(
  'a read-only cache directory is a CacheWriteError when not root',
  { skip: process.getuid?.() === 0 && 'root ignores directory permissions' },
  async (t) => {
    const { dir, cache } = setup(t);
    await cache.ensureDir();
    chmodSync(dir, 0o500);
    t.teardown(() => chmodSync(dir, 0o700));
    await t.rejects(cache.store('k', 1), CacheWriteError);
  },
);

t.test(
  'an unchanged value is neither serialised nor rewritten: the file keeps its inode and its own formatting',
  async (t) => {
    const { cache } = setup(t);
    const { path: file } = await cache.store('k', { a: 1, b: ['x'] });
    // The same document, formatted otherwise (as another writer might have left it).
    writeFileSync(file, '{"a":1,"b":["x"]}', { mode: 0o600 });
    const ino = statSync(file).ino;
    t.equal((await cache.store('k', { a: 1, b: ['x'] })).changed, true, 'never committed: still a change');
    t.equal(statSync(file).ino, ino, 'not replaced');
    t.equal(read(file), '{"a":1,"b":["x"]}');
    await cache.commit('k');
    t.equal((await cache.store('k', { a: 1, b: ['x'] })).changed, false, 'committed: unchanged');
    t.equal(statSync(file).ino, ino);
    t.equal((await cache.store('k', { a: 2, b: ['x'] })).changed, true, 'a new value');
    t.not(statSync(file).ino, ino, 'written anew');
    t.equal(read(file), '{\n "a": 2,\n "b": [\n  "x"\n ]\n}');
  },
);

t.test('a damaged cache file is rewritten from the value', async (t) => {
  const { cache } = setup(t);
  const { path: file } = await cache.store('k', { a: 1 });
  writeFileSync(file, '{"a": 1', { mode: 0o600 });
  await cache.store('k', { a: 1 });
  t.equal(read(file), '{\n "a": 1\n}');
});

t.test('a cache directory others can write is neither written nor committed: ERR_UNTRUSTED_PATH', async (t) => {
  const { dir, captured } = setup(t);
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o777);
  const cache = new MetadataCache(dir, captured.log);
  await t.rejects(cache.store('heat', { a: 1 }), { code: 'ERR_UNTRUSTED_PATH', message: /is writable by others/ });
  await t.rejects(cache.commit('heat'), { code: 'ERR_UNTRUSTED_PATH' });
  await t.rejects(cache.storeMetaList([]), { code: 'ERR_UNTRUSTED_PATH' });
  t.same(readdirSync(dir), [], 'nothing written');
  chmodSync(dir, 0o700);
  t.equal((await new MetadataCache(dir, captured.log).store('heat', { a: 1 })).changed, true, 'once fixed, it works');
});

t.test('the key of the file list is refused: nothing may overwrite os_config_files.json', async (t) => {
  const { cache } = setup(t);
  await t.rejects(cache.store('os_config_files', { b: 2 }), ReservedNameError);
  t.throws(() => cache.pathOf('os_config_files'), { code: 'ERR_RESERVED_NAME' });
});

t.test('backup removes the staging copy a dead process left, and not a live one', async (t) => {
  const { base, cache } = setup(t);
  await cache.store('k', { a: 1 });
  const backupDir = path.join(base, 'var/lib/os-collect-config-backup');
  const dead = `${backupDir}.tmp-2147483646`;
  const live = `${backupDir}.tmp-1`;
  for (const dir of [dead, live]) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'k.json.orig'), '{"a":');
  }
  await cache.backup(backupDir);
  t.notOk(existsSync(dead), "the dead process's cut-short copy is gone");
  t.ok(existsSync(live), 'a live process (pid 1) keeps its own');
  t.ok(existsSync(path.join(backupDir, 'k.json')));
});
