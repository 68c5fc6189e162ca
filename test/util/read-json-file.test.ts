import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { readJsonFile } from '../../src/util/read-json-file.js';

t.test('a valid file: value and size', async (t) => {
  const dir = t.testdir({ 'a.json': '{"a": [1, "é"]}' });
  const res = await readJsonFile(path.join(dir, 'a.json'), 1024);
  t.same(res, { ok: true, value: { a: [1, 'é'] }, size: Buffer.byteLength('{"a": [1, "é"]}') });
});

t.test('any JSON value is accepted (lists, scalars)', async (t) => {
  const dir = t.testdir({ list: '[1, 2]', num: '3', str: '"s"', nul: 'null' });
  t.same(await readJsonFile(path.join(dir, 'list'), 100), { ok: true, value: [1, 2], size: 6 });
  t.same(await readJsonFile(path.join(dir, 'num'), 100), { ok: true, value: 3, size: 1 });
  t.same(await readJsonFile(path.join(dir, 'str'), 100), { ok: true, value: 's', size: 3 });
  t.same(await readJsonFile(path.join(dir, 'nul'), 100), { ok: true, value: null, size: 4 });
});

t.test('hostile keys stay plain data', async (t) => {
  const dir = t.testdir({ h: '{"__proto__": {"polluted": 1}}' });
  const res = await readJsonFile(path.join(dir, 'h'), 100);
  t.equal(res.ok, true);
  if (!res.ok) return;
  t.equal(Object.getPrototypeOf(res.value), Object.prototype);
  t.equal((res.value as { polluted?: unknown }).polluted, undefined);
});

t.test('missing file and missing parent are "missing"', async (t) => {
  const dir = t.testdir({ plain: 'x' });
  t.match(await readJsonFile(path.join(dir, 'absent.json'), 100), { ok: false, reason: 'missing' });
  t.match(await readJsonFile(path.join(dir, 'no/such/file'), 100), { ok: false, reason: 'missing' });
  t.match(await readJsonFile(path.join(dir, 'plain/child'), 100), { ok: false, reason: 'missing' }, 'ENOTDIR');
});

t.test('a directory is "not-a-file"', async (t) => {
  const dir = t.testdir({ sub: {} });
  t.match(await readJsonFile(path.join(dir, 'sub'), 100), { ok: false, reason: 'not-a-file' });
});

t.test('a FIFO is "not-a-file" and does not hang waiting for a writer', async (t) => {
  const dir = t.testdir();
  const fifo = path.join(dir, 'pipe');
  execFileSync('mkfifo', [fifo]);
  t.match(await readJsonFile(fifo, 100), { ok: false, reason: 'not-a-file' });
});

t.test('invalid JSON names the parse error', async (t) => {
  const dir = t.testdir({ bad: '{"a": ', empty: '', bom: '\ufeff{}' });
  const bad = await readJsonFile(path.join(dir, 'bad'), 100);
  t.match(bad, { ok: false, reason: 'invalid-json', detail: /JSON/ });
  t.match(
    await readJsonFile(path.join(dir, 'empty'), 100),
    { ok: false, reason: 'invalid-json' },
    'an empty file is invalid JSON',
  );
  t.match(
    await readJsonFile(path.join(dir, 'bom'), 100),
    { ok: false, reason: 'invalid-json' },
    'a BOM is invalid, as in Python',
  );
});

t.test('size cap: exactly the cap is read, one byte over is refused', async (t) => {
  const dir = t.testdir();
  const file = path.join(dir, 'sized');
  const text = JSON.stringify({ k: 'x'.repeat(100) });
  writeFileSync(file, text);
  const size = Buffer.byteLength(text);
  t.match(await readJsonFile(file, size), { ok: true, size });
  const over = await readJsonFile(file, size - 1);
  t.match(over, { ok: false, reason: 'too-large' });
  if (!over.ok) t.match(over.detail, new RegExp(`${size} bytes is over the ${size - 1}-byte limit`));
});

t.test('a file read through a symlink works; a dangling symlink is missing', async (t) => {
  const dir = t.testdir({
    real: '{"r": 1}',
    link: t.fixture('symlink', 'real'),
    dangling: t.fixture('symlink', 'nowhere'),
  });
  t.match(await readJsonFile(path.join(dir, 'link'), 100), { ok: true, value: { r: 1 } });
  t.match(await readJsonFile(path.join(dir, 'dangling'), 100), { ok: false, reason: 'missing' });
});
