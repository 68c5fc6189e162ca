import { existsSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { runBundle, saveCodeCache } from '../../src/launch/code-cache.js';
import type { TapTest } from '../helpers/http-test-server.js';

/** A CommonJS "bundle" with a dependency beside it, so require() must resolve relative to the bundle. */
function fixture(t: TapTest, body = "module.exports = { answer: require('./dep.cjs') * 2, file: __filename };") {
  const dir = t.testdir({ 'bundle.cjs': body, 'dep.cjs': 'module.exports = 21;' });
  return { dir, bundle: path.join(dir, 'bundle.cjs'), cache: path.join(dir, 'bundle.cjs.cache') };
}

t.test('runs a CommonJS bundle with its own require and __filename; no cache yet', async (t) => {
  const { bundle, cache } = fixture(t);
  const run = runBundle(bundle, cache);
  t.equal(run.state, 'absent');
  t.same(run.exports, { answer: 42, file: bundle });
});

t.test('a saved cache is accepted by the next run', async (t) => {
  const { dir, bundle, cache } = fixture(t);
  t.ok(saveCodeCache(runBundle(bundle, cache), cache));
  t.ok(readFileSync(cache).length > 0);
  t.same(readdirSync(dir).sort(), ['bundle.cjs', 'bundle.cjs.cache', 'dep.cjs'], 'no temp file left');
  const again = runBundle(bundle, cache);
  t.equal(again.state, 'accepted');
  t.same(again.exports, { answer: 42, file: bundle }, 'and the bundle still runs');
});

t.test('a corrupt cache, or one made for other source, is rejected and the bundle runs anyway', async (t) => {
  const { bundle, cache } = fixture(t);
  writeFileSync(cache, Buffer.from('not a V8 code cache at all'));
  const corrupt = runBundle(bundle, cache);
  t.equal(corrupt.state, 'stale', 'no stamp: not even handed to V8');
  t.same(corrupt.exports, { answer: 42, file: bundle });

  t.ok(saveCodeCache(runBundle(bundle, cache), cache));
  const stamped = readFileSync(cache);
  const nl = stamped.indexOf(10);
  writeFileSync(cache, Buffer.concat([stamped.subarray(0, nl + 1), Buffer.from('corrupt V8 data')]));
  // V8 decides; it does not always report garbage as rejected, but it never runs it: it compiles the source.
  const damaged = runBundle(bundle, cache);
  t.same(damaged.exports, { answer: 42, file: bundle }, 'right stamp, damaged data: the bundle still runs correctly');
});

t.test('a cache made for other source of the same length is never run (V8 alone would run it)', async (t) => {
  const { bundle, cache } = fixture(t, 'module.exports = 6 * 7;');
  t.ok(saveCodeCache(runBundle(bundle, cache), cache));
  t.equal(runBundle(bundle, cache).exports, 42);
  const mtime = statSync(bundle).mtime;
  writeFileSync(bundle, 'module.exports = 9 * 9;');
  utimesSync(bundle, mtime, new Date(mtime.getTime() + 2000));
  const edited = runBundle(bundle, cache);
  t.equal(edited.state, 'stale');
  t.equal(edited.exports, 81, 'the new source ran, not the cached old code');
});

t.test('saving where it cannot write returns false and leaves nothing', async (t) => {
  const { dir, bundle, cache } = fixture(t);
  const unwritable = path.join(dir, 'no-such-dir', 'bundle.cjs.cache');
  t.notOk(saveCodeCache(runBundle(bundle, cache), unwritable));
  t.notOk(existsSync(path.dirname(unwritable)));
  t.same(readdirSync(dir).sort(), ['bundle.cjs', 'dep.cjs']);
});
