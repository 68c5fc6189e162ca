import { execFileSync } from 'node:child_process';
import * as realFs from 'node:fs';
import { chmodSync, chownSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import type { CollectContext } from '../../src/collectors/types.js';
import { localCollector } from '../../src/collectors/local.js';
import type { CliOverrides } from '../../src/config/load.js';
import { SourceUnavailableError } from '../../src/errors.js';
import { offlineContext } from '../helpers/offline-context.js';

const context = (root: string, cli: CliOverrides = {}) => offlineContext('local', root, cli);

/** A data directory under the root, mode 0700 (as an image would make it). */
function dataDir(root: string, rel: string, files: Record<string, string> = {}): string {
  const dir = path.join(root, rel);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text, { mode: 0o600 });
  return dir;
}

// The few assertions the helper needs (tap's Test type is not exported with its plugins).
interface Asserts {
  ok(value: unknown, message: string): unknown;
  equal(found: unknown, wanted: unknown, message: string): unknown;
  match(found: unknown, pattern: unknown, message: string): unknown;
}

async function insecure(t: Asserts, ctx: CollectContext, pattern: RegExp) {
  const err = await localCollector.collect(ctx).catch((e: unknown) => e);
  t.ok(err instanceof SourceUnavailableError, 'SourceUnavailableError');
  t.equal((err as SourceUnavailableError).code, 'ERR_SOURCE_INSECURE', 'code');
  t.equal((err as SourceUnavailableError).collector, 'local', 'collector');
  t.match((err as Error).message, pattern, 'message');
}

t.test('default directory: one pair per file, key = file name with extension, sorted by byte order', async (t) => {
  const root = t.testdir();
  dataDir(root, 'var/lib/os-collect-config/local-data', {
    '20-more': '{"b": 2, "deployments": [{"name": "d1", "group": "os-apply-config", "config": {"x": 1}}]}',
    '10-base.json': '{"a": 1, "nested": {"x": "y"}}',
    'Zed.json': '{}',
    'é-accent': '"s"',
    _under: '[1, 2]',
  });
  const { ctx } = await context(root);
  const res = await localCollector.collect(ctx);
  t.same(
    res.pairs.map((p) => p.key),
    ['10-base.json', '20-more', 'Zed.json', '_under', 'é-accent'],
    'byte order: digits < upper case < "_" < lower case < non-ASCII',
  );
  t.same(res.pairs[0]?.value, { a: 1, nested: { x: 'y' } });
  t.same(res.pairs[3]?.value, [1, 2], 'a list is accepted as a value');
  t.same(res.pairs[4]?.value, 's');
  t.same(
    res.pairs[1]?.value,
    { b: 2, deployments: [{ name: 'd1', group: 'os-apply-config', config: { x: 1 } }] },
    'deployments are not exploded',
  );
  t.equal(res.pairs.length, 5);
});

t.test(
  'the same files with the same bytes: the last pairs again, unchanged; an edit, a new or a removed file is seen',
  async (t) => {
    const root = t.testdir();
    const dir = dataDir(root, 'var/lib/os-collect-config/local-data', { a: '{"v": 1}', b: '{"w": 1}' });
    const { ctx } = await context(root);
    const first = await localCollector.collect(ctx);
    t.notOk(first.unchanged);
    const second = await localCollector.collect(ctx);
    t.equal(second.unchanged, true, 'nothing changed');
    t.equal(second.pairs, first.pairs, 'the same pairs, not parsed again');
    writeFileSync(path.join(dir, 'b'), '{"w": 2}');
    const edited = await localCollector.collect(ctx);
    t.notOk(edited.unchanged, 'an edit in place');
    t.same(edited.pairs[1], { key: 'b', value: { w: 2 } });
    t.equal(edited.pairs[0]?.value, first.pairs[0]?.value, 'the untouched file is not parsed again');
    writeFileSync(path.join(dir, 'c'), '{}', { mode: 0o600 });
    t.same(
      (await localCollector.collect(ctx)).pairs.map((p) => p.key),
      ['a', 'b', 'c'],
      'a new file',
    );
    rmSync(path.join(dir, 'a'));
    const removed = await localCollector.collect(ctx);
    t.notOk(removed.unchanged, 'a removed file');
    t.same(
      removed.pairs.map((p) => p.key),
      ['b', 'c'],
    );
    t.equal((await localCollector.collect(ctx)).unchanged, true);
  },
);

t.test('several directories are sorted together; duplicates are all returned in directory order', async (t) => {
  const root = t.testdir();
  dataDir(root, 'one', { b: '{"from": "one"}', d: '1', same: '"one"' });
  dataDir(root, 'two', { a: '2', c: '3', same: '"two"' });
  const { ctx } = await context(root, { local: { path: ['/one', '/two'] } });
  const res = await localCollector.collect(ctx);
  t.same(
    res.pairs.map((p) => [p.key, p.value]),
    [
      ['a', 2],
      ['b', { from: 'one' }],
      ['c', 3],
      ['d', 1],
      ['same', 'one'],
      ['same', 'two'],
    ],
  );
});

t.test('hidden files and subdirectories are skipped', async (t) => {
  const root = t.testdir();
  const dir = dataDir(root, 'data', { '.dotfile': '{"hidden": 1}', '.swp': 'not json', visible: '{"v": 1}' });
  mkdirSync(path.join(dir, 'subdir'));
  writeFileSync(path.join(dir, 'subdir/inner.json'), '{"inner": 1}');
  const { ctx } = await context(root, { local: { path: ['/data'] } });
  t.same((await localCollector.collect(ctx)).pairs, [{ key: 'visible', value: { v: 1 } }]);
});

t.test('a FIFO is skipped with a warning instead of blocking', async (t) => {
  const root = t.testdir();
  const dir = dataDir(root, 'data', { ok: '1' });
  execFileSync('mkfifo', ['-m', '600', path.join(dir, 'pipe')]);
  const { ctx, captured } = await context(root, { local: { path: ['/data'] } });
  t.same((await localCollector.collect(ctx)).pairs, [{ key: 'ok', value: 1 }]);
  t.match(captured.lines, [
    { level: 'warn', file: path.join(dir, 'pipe'), msg: 'local data entry is not a regular file; skipping' },
  ]);
});

t.test('a missing directory is a warning; the other directories still count', async (t) => {
  const root = t.testdir();
  dataDir(root, 'present', { k: '{"k": 1}' });
  const { ctx, captured } = await context(root, { local: { path: ['/absent', '/present'] } });
  t.same((await localCollector.collect(ctx)).pairs, [{ key: 'k', value: { k: 1 } }]);
  t.match(captured.lines, [
    { level: 'warn', dir: path.join(root, 'absent'), msg: 'local data directory not found; skipping' },
  ]);
});

t.test('a path that is a file, not a directory, is a warning', async (t) => {
  const root = t.testdir({ notadir: '{}' });
  const { ctx, captured } = await context(root, { local: { path: ['/notadir'] } });
  t.same((await localCollector.collect(ctx)).pairs, []);
  t.match(captured.lines, [{ level: 'warn', msg: 'local data path is not a directory; skipping' }]);
});

t.test('nothing found is not an error: empty pairs and an info line', async (t) => {
  const root = t.testdir();
  dataDir(root, 'empty');
  const { ctx, captured } = await context(root, { local: { path: ['/empty'] } });
  t.same(await localCollector.collect(ctx), { pairs: [] });
  t.match(captured.lines, [{ level: 'info', msg: 'no local metadata found' }]);
});

t.test('no directories configured: unavailable', async (t) => {
  const root = t.testdir();
  const { ctx } = await context(root, { local: { path: [] } });
  const err = await localCollector.collect(ctx).catch((e: unknown) => e);
  t.ok(err instanceof SourceUnavailableError);
  t.equal((err as SourceUnavailableError).code, 'ERR_SOURCE_UNAVAILABLE');
});

t.test('a world-writable file makes the whole source insecure', async (t) => {
  const root = t.testdir();
  const dir = dataDir(root, 'data', { good: '1', bad: '2' });
  chmodSync(path.join(dir, 'bad'), 0o666);
  const { ctx } = await context(root, { local: { path: ['/data'] } });
  await insecure(t, ctx, new RegExp(`${path.join(dir, 'bad')} is not trusted: is writable by others \\(mode 0666\\)`));
});

t.test('a world-writable directory is insecure', async (t) => {
  const root = t.testdir();
  const dir = dataDir(root, 'data', { good: '1' });
  chmodSync(dir, 0o777);
  const { ctx } = await context(root, { local: { path: ['/data'] } });
  await insecure(t, ctx, new RegExp(`^${dir} is not trusted: is writable by others \\(mode 0777\\); make it`));
});

t.test('a directory above the data directory that others can write makes it insecure too', async (t) => {
  const root = t.testdir();
  const dir = dataDir(root, 'shared/data', { good: '1' });
  chmodSync(path.dirname(dir), 0o777);
  const { ctx } = await context(root, { local: { path: ['/shared/data'] } });
  await insecure(t, ctx, new RegExp(`^${dir} is not trusted: ${path.dirname(dir)} is writable by others`));
});

t.test(
  'a directory owned by another user is insecure',
  { skip: process.getuid?.() !== 0 && 'needs root to chown' },
  async (t) => {
    const root = t.testdir();
    const dir = dataDir(root, 'data', { good: '1' });
    chownSync(dir, 65534, 65534);
    const { ctx } = await context(root, { local: { path: ['/data'] } });
    await insecure(t, ctx, /is owned by user 65534, not by root or the agent's user/);
  },
);

t.test(
  "a group-writable file counts only when the group is root's or the agent's (upstream accepted any)",
  { skip: process.getuid?.() !== 0 && 'needs root to chown' },
  async (t) => {
    const root = t.testdir();
    const dir = dataDir(root, 'data', { shared: '{"s": 1}' });
    chmodSync(path.join(dir, 'shared'), 0o660);
    const { ctx } = await context(root, { local: { path: ['/data'] } });
    t.same((await localCollector.collect(ctx)).pairs, [{ key: 'shared', value: { s: 1 } }], 'root:root 0660');
    chownSync(path.join(dir, 'shared'), 0, 65534);
    await insecure(t, ctx, /shared is not trusted: is writable by group 65534 \(mode 0660\)/);
  },
);

t.test('invalid JSON: ERR_SOURCE_INVALID_DATA naming the file', async (t) => {
  const root = t.testdir();
  const dir = dataDir(root, 'data', { good: '1', broken: '{"a": ' });
  const { ctx } = await context(root, { local: { path: ['/data'] } });
  const err = await localCollector.collect(ctx).catch((e: unknown) => e);
  t.ok(err instanceof SourceUnavailableError);
  t.equal((err as SourceUnavailableError).code, 'ERR_SOURCE_INVALID_DATA');
  t.match(
    (err as Error).message,
    new RegExp(`^${path.join(dir, 'broken')} is not valid JSON \\(.+\\); fix or remove it$`),
  );
});

t.test('a file over max_source_bytes is a clear error naming the option', async (t) => {
  const root = t.testdir();
  const dir = dataDir(root, 'data', { small: '1', big: JSON.stringify({ blob: 'x'.repeat(200) }) });
  const { ctx } = await context(root, { local: { path: ['/data'] }, agent: { max_source_bytes: 100 } });
  const err = await localCollector.collect(ctx).catch((e: unknown) => e);
  t.equal((err as SourceUnavailableError).code, 'ERR_SOURCE_INVALID_DATA');
  t.match(
    (err as Error).message,
    new RegExp(
      `^${path.join(dir, 'big')} is too large: 211 bytes is over the 100-byte limit; shrink it or raise \\[agent\\] max_source_bytes$`,
    ),
  );
});

t.test('a directory removed between stat and listing is skipped with a warning', async (t) => {
  const root = t.testdir();
  const doomed = dataDir(root, 'doomed', { a: '1' });
  dataDir(root, 'stays', { b: '2' });
  const { localCollector: mocked } = await t.mockImport<typeof import('../../src/collectors/local.js')>(
    '../../src/collectors/local.js',
    {
      'node:fs': {
        ...realFs,
        promises: {
          ...realFs.promises,
          readdir: async (dir: string) => {
            if (dir === doomed) rmSync(doomed, { recursive: true });
            return realFs.promises.readdir(dir);
          },
        },
      },
    },
  );
  const { ctx, captured } = await context(root, { local: { path: ['/doomed', '/stays'] } });
  t.same((await mocked.collect(ctx)).pairs, [{ key: 'b', value: 2 }]);
  t.match(captured.lines, [
    { level: 'warn', dir: doomed, reason: 'ENOENT', msg: 'local data directory could not be listed; skipping' },
  ]);
});

t.test('files removed after the listing are skipped silently', async (t) => {
  const root = t.testdir();
  const dir = dataDir(root, 'data', { gone1: '1', gone2: '2', kept: '3' });
  const { localCollector: mocked } = await t.mockImport<typeof import('../../src/collectors/local.js')>(
    '../../src/collectors/local.js',
    {
      'node:fs': {
        ...realFs,
        promises: {
          ...realFs.promises,
          readdir: async (d: string) => {
            const names = await realFs.promises.readdir(d);
            rmSync(path.join(dir, 'gone1'));
            return names;
          },
          // gone2 disappears between its stat and its read.
          stat: async (p: string) => {
            const st = await realFs.promises.stat(p);
            if (p === path.join(dir, 'gone2')) rmSync(p);
            return st;
          },
        },
      },
    },
  );
  const { ctx, captured } = await context(root, { local: { path: ['/data'] } });
  t.same((await mocked.collect(ctx)).pairs, [{ key: 'kept', value: 3 }]);
  t.same(
    captured.lines.filter((l) => l.level === 'warn' || l.level === 'error'),
    [],
  );
});

t.test('watchPaths are the configured directories', async (t) => {
  const root = t.testdir();
  const { ctx } = await context(root, { local: { path: ['/a', '/b'] } });
  t.same(localCollector.watchPaths?.(ctx.config), [`${root}/a`, `${root}/b`]);
  t.equal(localCollector.name, 'local');
});

t.test('steady conditions are logged when they start and when they end, not at every poll', async (t) => {
  const root = t.testdir();
  const dir = dataDir(root, 'data', { shared: '{"s": 1}' });
  execFileSync('mkfifo', ['-m', '600', path.join(dir, 'pipe')]);
  const { ctx, captured } = await context(root, { local: { path: ['/absent', '/data'] } });
  for (let i = 0; i < 3; i++) await localCollector.collect(ctx);
  const msgs = () => captured.lines.map((l) => l.msg);
  t.same(
    msgs(),
    ['local data directory not found; skipping', 'local data entry is not a regular file; skipping'],
    'three polls, each condition once',
  );

  rmSync(path.join(dir, 'pipe'));
  dataDir(root, 'absent');
  await localCollector.collect(ctx);
  await localCollector.collect(ctx);
  t.same(
    msgs().slice(2).sort(),
    ['local data directory found', 'local data entry is gone or now a regular file'],
    'each end once',
  );

  // A poll the source fails (a world-writable file) ends nothing it did not look at.
  rmSync(path.join(dir, 'shared'));
  await localCollector.collect(ctx);
  t.equal(msgs().filter((m) => m === 'no local metadata found').length, 1);
  writeFileSync(path.join(dir, 'open'), '{}', { mode: 0o600 });
  chmodSync(path.join(dir, 'open'), 0o666);
  await localCollector.collect(ctx).catch(() => undefined);
  rmSync(path.join(dir, 'open'));
  await localCollector.collect(ctx);
  t.equal(
    msgs().filter((m) => m === 'local metadata found').length,
    0,
    'the failed poll did not end "no local metadata"',
  );
  t.equal(msgs().filter((m) => m === 'no local metadata found').length, 1, 'nor start it again');
});
