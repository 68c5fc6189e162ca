import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { fileMark, unchangedSince } from '../../src/util/file-mark.js';
import { JsonFileMemo } from '../../src/util/json-file-memo.js';

// A source file read at every poll: the same file gives the same object back; any change (in place, replaced,
// removed, a lower size limit) is read and parsed again. AHEAD: a clock 10 s ahead, so the files count as settled.

const AHEAD = () => Date.now() + 10_000;
const tick = () => new Promise((resolve) => setTimeout(resolve, 12));

for (const [clock, name] of [
  [AHEAD, 'settled files (the stat decides)'],
  [Date.now, 'fresh files (the digest decides)'],
] as const) {
  t.test(`${name}: the same file is the same object; every change is seen`, async (t) => {
    const file = path.join(t.testdir(), 'doc.json');
    writeFileSync(file, '{"a": 1, "big": 12345678901234567890}');
    const memo = new JsonFileMemo(clock);
    const first = await memo.read(file, 1024);
    t.match(first, { ok: true, value: { a: 1 } });
    const second = await memo.read(file, 1024);
    t.equal(second.ok && second.value, first.ok && first.value, 'the same object');
    await tick();
    writeFileSync(file, '{"a": 2, "big": 12345678901234567890}');
    const edited = await memo.read(file, 1024);
    t.match(edited, { ok: true, value: { a: 2 } }, 'edited in place, same size');
    await tick();
    rmSync(file);
    t.match(await memo.read(file, 1024), { ok: false, reason: 'missing' });
    writeFileSync(file, '{"a": 2, "big": 12345678901234567890}');
    const back = await memo.read(file, 1024);
    t.match(back, { ok: true, value: { a: 2 } }, 'back after removal');
    t.match(await memo.read(file, 10), { ok: false, reason: 'too-large' }, 'a lower size limit reads again');
    await tick();
    writeFileSync(file, 'not json');
    t.match(await memo.read(file, 1024), { ok: false, reason: 'invalid-json' });
  });
}

t.test('a mark is trusted only once the file has not changed for two seconds', async (t) => {
  const file = path.join(t.testdir(), 'f');
  writeFileSync(file, 'x');
  const fresh = fileMark(file);
  t.equal(fresh?.settled, false, 'just written: not settled');
  t.notOk(unchangedSince(fresh, fileMark(file)), 'so it never shows "unchanged"');
  const later = fileMark(file, Date.now() + 2500);
  t.equal(later?.settled, true);
  t.ok(unchangedSince(later, fileMark(file)), 'settled and the same: unchanged');
  t.ok(unchangedSince(undefined, fileMark(path.join(file, '..', 'missing'))), 'missing both times: unchanged');
  t.notOk(unchangedSince(later, undefined), 'removed: changed');
});
