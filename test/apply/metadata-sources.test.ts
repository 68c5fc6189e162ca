import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import {
  DEFAULT_OS_CONFIG_FILES,
  loadMetadata,
  MAX_METADATA_BYTES,
  OLD_OS_CONFIG_FILES,
  selectMetadataFiles,
} from '../../src/apply/metadata-sources.js';
import { MAX_JSON_DEPTH } from '../../src/util/json-depth.js';
import { createPathMapper } from '../../src/util/rooted-path.js';
import { captureLog } from '../helpers/log-capture.js';

t.test('loadMetadata merges in order, later wins, objects recursively', async (t) => {
  const dir = t.testdir({
    '1.json': JSON.stringify({ a: { x: 1, y: 1 }, l: [1, 2], s: 's', o: { k: 1 } }),
    '2.json': JSON.stringify({ a: { y: 2, z: 2 }, l: [9], s: { now: 'object' }, o: null }),
    'list.json': '[1, 2]',
    'empty.json': '{}',
    'scalar.json': '"x"',
  });
  const files = ['1.json', '', 'missing.json', 'list.json', '2.json', 'empty.json', 'scalar.json'].map((f) =>
    f === '' ? '' : path.join(dir, f),
  );
  t.same(await loadMetadata(files), { a: { x: 1, y: 2, z: 2 }, l: [9], s: { now: 'object' }, o: null });
  t.same(await loadMetadata([]), {});
});

t.test('loadMetadata is safe against __proto__ keys', async (t) => {
  const dir = t.testdir({ 'p.json': '{"__proto__": {"polluted": true}, "a": 1}' });
  const merged = await loadMetadata([path.join(dir, 'p.json')]);
  t.equal(({} as Record<string, unknown>).polluted, undefined);
  t.equal(Object.getPrototypeOf(merged), Object.prototype);
  t.same(Object.keys(merged).sort(), ['__proto__', 'a']);
});

t.test('metadata from a pipe (-m <(...)) is read as it comes, as upstream reads it', async (t) => {
  const dir = t.testdir({ 'base.json': JSON.stringify({ a: 1, b: 1 }) });
  const fifo = path.join(dir, 'piped');
  t.equal(spawnSync('mkfifo', [fifo]).status, 0);
  // The writer is another process: the read opens the pipe and waits for it, as a shell's process substitution does.
  const writer = spawn('sh', ['-c', `sleep 0.1; printf '%s' '{"b": 2, "c": 3}' > '${fifo}'`], {
    stdio: 'ignore',
    timeout: 10_000,
  });
  t.same(await loadMetadata([path.join(dir, 'base.json'), fifo]), { a: 1, b: 2, c: 3 });
  if (writer.exitCode === null) await new Promise((resolve) => writer.once('exit', resolve));
});

t.test('bad metadata files are errors naming the file', async (t) => {
  const dir = t.testdir({
    'bad.json': '{"a": ',
    dir: {},
    'deep.json': '['.repeat(MAX_JSON_DEPTH + 2) + ']'.repeat(MAX_JSON_DEPTH + 2),
  });
  await t.rejects(loadMetadata([path.join(dir, 'bad.json')]), {
    code: 'ERR_METADATA',
    message: /^Could not parse metadata file: .*bad\.json/,
  });
  await t.rejects(loadMetadata([path.join(dir, 'dir')]), {
    code: 'ERR_METADATA',
    message: /Could not open .*dir for reading \(EISDIR\)/,
  });
  await t.rejects(loadMetadata([path.join(dir, 'deep.json')]), { code: 'ERR_METADATA', message: /nested more than/ });
  t.ok(MAX_METADATA_BYTES > 1024 * 1024);
});

t.test(
  'unreadable metadata is an error',
  { skip: process.getuid?.() === 0 ? 'root reads every file' : false },
  async (t) => {
    const dir = t.testdir({ 'secret.json': '{}' });
    chmodSync(path.join(dir, 'secret.json'), 0);
    await t.rejects(loadMetadata([path.join(dir, 'secret.json')]), { code: 'ERR_METADATA', message: /Could not open/ });
  },
);

t.test('selectMetadataFiles: -m, then $OS_CONFIG_FILES, then the JSON list', async (t) => {
  const root = t.testdir({
    custom: { 'list.json': '["/a.json", "/b.json"]', 'obj.json': '{"a": 1}', 'bad.json': '[', 'nums.json': '[1]' },
  });
  const paths = createPathMapper(root);
  const { log, lines } = captureLog();
  const sel = { env: {}, paths, log };
  t.same(await selectMetadataFiles({ ...sel, metadata: ['m1', 'm2'], env: { OS_CONFIG_FILES: 'x:y' } }), ['m1', 'm2']);
  t.same(
    await selectMetadataFiles({ ...sel, metadata: [], env: { OS_CONFIG_FILES: 'x:y' } }),
    ['x', 'y'],
    'an empty -m is not given',
  );
  t.same(await selectMetadataFiles({ ...sel, env: { OS_CONFIG_FILES: '' } }), [''], 'an empty variable still wins');
  t.same(await selectMetadataFiles({ ...sel, osConfigFiles: '/custom/list.json' }), ['/a.json', '/b.json']);
  t.same(await selectMetadataFiles({ ...sel, env: { OS_CONFIG_FILES_PATH: '/custom/list.json' } }), [
    '/a.json',
    '/b.json',
  ]);
  t.same(await selectMetadataFiles({ ...sel, osConfigFiles: '/custom/missing.json' }), []);
  t.equal(lines.length, 0, 'no deprecation warning for a non-default list');
  await t.rejects(selectMetadataFiles({ ...sel, osConfigFiles: '/custom/obj.json' }), {
    code: 'ERR_METADATA',
    message: 'No list defined in json file: /custom/obj.json',
  });
  await t.rejects(selectMetadataFiles({ ...sel, osConfigFiles: '/custom/bad.json' }), {
    code: 'ERR_METADATA',
    message: /Could not parse \/custom\/bad\.json/,
  });
  await t.rejects(selectMetadataFiles({ ...sel, osConfigFiles: '/custom/nums.json' }), {
    code: 'ERR_METADATA',
    message: /list of file names/,
  });
});

t.test('an empty default list falls back to the old location, with a warning', async (t) => {
  const root = t.testdir({});
  const paths = createPathMapper(root);
  const { log, lines } = captureLog();
  t.same(await selectMetadataFiles({ env: {}, paths, log }), []);
  t.match(lines, [{ level: 'warn', file: OLD_OS_CONFIG_FILES }]);
  writeFileSync(path.join(root, 'list.json'), '[]');
  const oldDir = paths.map(path.dirname(OLD_OS_CONFIG_FILES));
  const defDir = paths.map(path.dirname(DEFAULT_OS_CONFIG_FILES));
  mkdirSync(oldDir, { recursive: true });
  mkdirSync(defDir, { recursive: true });
  writeFileSync(paths.map(DEFAULT_OS_CONFIG_FILES), '[]');
  writeFileSync(paths.map(OLD_OS_CONFIG_FILES), '["/old.json"]');
  t.same(await selectMetadataFiles({ env: {}, paths, log }), ['/old.json']);
  writeFileSync(paths.map(DEFAULT_OS_CONFIG_FILES), '["/new.json"]');
  t.same(await selectMetadataFiles({ env: {}, paths, log }), ['/new.json']);
});
