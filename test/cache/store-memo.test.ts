import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import t from 'tap';
import { MetadataCache } from '../../src/cache/metadata-cache.js';
import { StoreMemo } from '../../src/cache/store-memo.js';
import { captureLog } from '../helpers/log-capture.js';

// The daemon's memo of what the cache verified: the very same value over untouched files is answered without reading
// them; anything else (another object, a file edited in place, replaced or removed, a commit, a restart) is checked.
// The memos here read a clock 10 s ahead, so that the files count as settled (util/file-mark.ts) as soon as they are
// written, and the test sleeps a few ms before each change, so that a coarse filesystem tick shows every change in
// the files' times as settled files would.

const AHEAD = () => Date.now() + 10_000;
const tick = () => new Promise((resolve) => setTimeout(resolve, 12));

const readIfAny = (file: string) => {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
};

t.test(
  'the same object over untouched files: answered from the memo; any change to a file: checked again',
  async (t) => {
    const dir = path.join(t.testdir(), 'cache');
    const cache = new MetadataCache(dir, captureLog().log);
    const memo = new StoreMemo(AHEAD);
    const value = { deployments: [{ id: 'a' }] };
    const file = path.join(dir, 'heat_local.json');
    t.same(await cache.store('heat_local', value, memo), { changed: true, path: file }, 'first store: changed');
    t.equal(memo.matchesLast(file, value), undefined, 'a first store (no .orig before) is not remembered');
    t.same(await cache.store('heat_local', value, memo), { changed: true, path: file }, 'not committed: still changed');
    t.equal(memo.matchesLast(file, value), false, 'remembered: does not match the committed value');
    t.equal(memo.matchesLast(file, { deployments: [{ id: 'a' }] }), undefined, 'an equal but other object: checked');
    await cache.commit('heat_local');
    t.equal(memo.matchesLast(file, value), undefined, 'the commit wrote .last: checked');
    t.same(await cache.store('heat_local', value, memo), { changed: false, path: file });
    t.equal(memo.matchesLast(file, value), true, 'remembered: matches');

    // An edit in place of the same size: a new change time, so the memo does not answer.
    const text = readFileSync(file, 'utf8');
    await tick();
    writeFileSync(file, text.replace('"a"', '"b"'));
    t.equal(memo.matchesLast(file, value), undefined, '<key>.json edited in place: checked');
    t.same(await cache.store('heat_local', value, memo), { changed: false, path: file });
    t.equal(readFileSync(file, 'utf8'), text, 'and the value written back');
    await tick();
    writeFileSync(`${file}.last`, text.replace('"a"', '"c"'));
    t.equal(memo.matchesLast(file, value), undefined, '.last edited in place: checked');
    t.same(await cache.store('heat_local', value, memo), { changed: true, path: file }, 'it no longer matches');
    await tick();
    rmSync(`${file}.last`);
    t.equal(memo.matchesLast(file, value), undefined, '.last removed: checked');
    t.same(await cache.store('heat_local', value, memo), { changed: true, path: file });
    memo.keepOnly(new Set());
    t.equal(memo.matchesLast(file, value), undefined, 'a key not stored in the last pass is forgotten');
  },
);

/** One step a daemon's cache can see between two polls. */
type Step =
  | { kind: 'store'; value: number; copy: boolean }
  | { kind: 'commit' }
  | { kind: 'edit'; suffix: '' | '.orig' | '.last' }
  | { kind: 'remove'; suffix: '' | '.orig' | '.last' }
  | { kind: 'restart' };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('store' as const), value: fc.integer({ min: 0, max: 2 }), copy: fc.boolean() }),
  fc.record({ kind: fc.constant('commit' as const) }),
  fc.record({
    kind: fc.constant('edit' as const),
    suffix: fc.constantFrom('' as const, '.orig' as const, '.last' as const),
  }),
  fc.record({
    kind: fc.constant('remove' as const),
    suffix: fc.constantFrom('' as const, '.orig' as const, '.last' as const),
  }),
  fc.record({ kind: fc.constant('restart' as const) }),
);

t.test('property: with the memo, every store answers and writes exactly as without it', async (t) => {
  const base = t.testdir();
  let run = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(step, { maxLength: 25 }), async (steps) => {
      run++;
      const log = captureLog().log;
      // Three values, each a fixed object (as an unchanged source hands back) or a fresh equal copy.
      const values = [0, 1, 2].map((i) => ({ deployments: [{ id: `d${i}`, config: { n: i, text: `v${i}` } }] }));
      const sides = ['memo', 'plain'].map((name) => {
        const dir = path.join(base, String(run), name);
        return { dir, cache: new MetadataCache(dir, log), memo: name === 'memo' ? new StoreMemo(AHEAD) : undefined };
      });
      for (const s of steps) {
        if (s.kind !== 'restart' && s.kind !== 'store') await tick();
        const answers: unknown[] = [];
        for (const side of sides) {
          const file = path.join(side.dir, 'k.json');
          if (s.kind === 'store') {
            const value = s.copy ? structuredClone(values[s.value]) : values[s.value];
            answers.push((await side.cache.store('k', value, side.memo)).changed);
          } else if (s.kind === 'commit') await side.cache.commit('k').catch(() => undefined);
          else if (s.kind === 'edit') {
            const text = readIfAny(`${file}${s.suffix}`);
            if (text !== undefined) writeFileSync(`${file}${s.suffix}`, text.replace(/d\d/, 'dX'));
          } else if (s.kind === 'remove') rmSync(`${file}${s.suffix}`, { force: true });
          else if (side.memo) side.memo = new StoreMemo(AHEAD);
          answers.push(...['', '.orig', '.last'].map((suffix) => readIfAny(`${file}${suffix}`)));
        }
        const half = answers.length / 2;
        if (JSON.stringify(answers.slice(0, half)) !== JSON.stringify(answers.slice(half)))
          throw new Error(
            `after ${JSON.stringify(s)}: memo ${JSON.stringify(answers.slice(0, half))} plain ${JSON.stringify(answers.slice(half))}`,
          );
      }
    }),
    { numRuns: 40 },
  );
  t.pass('the two caches agreed at every step');
});

t.test('a memo with the real clock does not answer for files that changed within the last two seconds', async (t) => {
  const dir = path.join(t.testdir(), 'cache');
  const cache = new MetadataCache(dir, captureLog().log);
  const memo = new StoreMemo();
  const value = { v: 1 };
  const file = path.join(dir, 'k.json');
  await cache.store('k', value, memo);
  await cache.commit('k');
  t.same(await cache.store('k', value, memo), { changed: false, path: file });
  t.equal(memo.matchesLast(file, value), undefined, 'just written: not settled, checked');
  const later = new StoreMemo(AHEAD);
  await cache.store('k', value, later);
  t.equal(later.matchesLast(file, value), true, 'the same files two seconds later: answered');
});
