import { chmodSync, chownSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { heatLocalCollector } from '../../src/collectors/heat-local.js';
import type { CollectContext } from '../../src/collectors/types.js';
import type { CliOverrides } from '../../src/config/load.js';
import { SourceUnavailableError } from '../../src/errors.js';
import { offlineContext } from '../helpers/offline-context.js';

const context = (root: string, cli: CliOverrides = {}) => offlineContext('heat_local', root, cli);

function put(root: string, rel: string, text: string): string {
  const file = path.join(root, rel);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text, { mode: 0o600 });
  return file;
}

interface Asserts {
  ok(value: unknown, message: string): unknown;
  equal(found: unknown, wanted: unknown, message: string): unknown;
}

async function unavailable(t: Asserts, ctx: CollectContext) {
  const err = await heatLocalCollector.collect(ctx).catch((e: unknown) => e);
  t.ok(err instanceof SourceUnavailableError, 'SourceUnavailableError');
  t.equal((err as SourceUnavailableError).code, 'ERR_SOURCE_UNAVAILABLE', 'code');
  t.equal((err as SourceUnavailableError).collector, 'heat_local', 'collector');
  return err as Error;
}

t.test('the default file: one pair keyed heat_local, deployments not exploded', async (t) => {
  const root = t.testdir();
  const doc = {
    'os-collect-config': { collectors: ['heat'] },
    deployments: [{ name: 'd', group: 'os-apply-config', config: {} }],
  };
  put(root, 'var/lib/heat-cfntools/cfn-init-data', JSON.stringify(doc));
  const { ctx } = await context(root);
  t.same(await heatLocalCollector.collect(ctx), { pairs: [{ key: 'heat_local', value: doc }] });
});

t.test('several files merge shallowly in order; later files win', async (t) => {
  const root = t.testdir();
  put(root, 'a.json', '{"a": 1, "shared": {"from": "a", "only_a": true}, "keep": "a"}');
  put(root, 'b.json', '{"b": 2, "shared": {"from": "b"}}');
  const { ctx } = await context(root, { heat_local: { path: ['/a.json', '/missing.json', '/b.json'] } });
  const res = await heatLocalCollector.collect(ctx);
  t.same(
    res.pairs,
    [{ key: 'heat_local', value: { a: 1, shared: { from: 'b' }, keep: 'a', b: 2 } }],
    'shared is replaced, not merged',
  );
});

t.test('invalid JSON and non-object files are skipped with a warning; missing files silently', async (t) => {
  const root = t.testdir();
  put(root, 'bad.json', '{"broken": ');
  put(root, 'list.json', '[1, 2]');
  put(root, 'null.json', 'null');
  put(root, 'str.json', '"text"');
  put(root, 'good.json', '{"ok": true}');
  const { ctx, captured } = await context(root, {
    heat_local: { path: ['/bad.json', '/list.json', '/null.json', '/str.json', '/missing', '/good.json'] },
  });
  t.same((await heatLocalCollector.collect(ctx)).pairs, [{ key: 'heat_local', value: { ok: true } }]);
  t.match(captured.lines, [
    { level: 'warn', file: `${root}/bad.json`, reason: /^invalid-json: /, msg: 'heat_local file skipped' },
    { level: 'warn', file: `${root}/list.json`, msg: 'heat_local file does not hold a JSON object; skipped' },
    { level: 'warn', file: `${root}/null.json`, msg: 'heat_local file does not hold a JSON object; skipped' },
    { level: 'warn', file: `${root}/str.json`, msg: 'heat_local file does not hold a JSON object; skipped' },
  ]);
  t.equal(captured.lines.length, 4, 'nothing about the missing file');
});

t.test('a file over max_source_bytes is skipped with a warning', async (t) => {
  const root = t.testdir();
  put(root, 'big.json', JSON.stringify({ blob: 'x'.repeat(500) }));
  put(root, 'small.json', '{"s": 1}');
  const { ctx, captured } = await context(root, {
    heat_local: { path: ['/big.json', '/small.json'] },
    agent: { max_source_bytes: 100 },
  });
  t.same((await heatLocalCollector.collect(ctx)).pairs, [{ key: 'heat_local', value: { s: 1 } }]);
  t.match(captured.lines, [{ level: 'warn', file: `${root}/big.json`, reason: 'too-large' }]);
});

t.test('nothing found is unavailable, naming the paths', async (t) => {
  const root = t.testdir();
  const { ctx } = await context(root);
  const err = await unavailable(t, ctx);
  t.equal(err.message, `no heat_local metadata in ${root}/var/lib/heat-cfntools/cfn-init-data`);
});

t.test('an empty object (upstream: falsy) is unavailable', async (t) => {
  const root = t.testdir();
  put(root, 'empty.json', '{}');
  const { ctx } = await context(root, { heat_local: { path: ['/empty.json'] } });
  await unavailable(t, ctx);
});

t.test('only invalid files is unavailable', async (t) => {
  const root = t.testdir();
  put(root, 'bad.json', 'nope');
  const { ctx } = await context(root, { heat_local: { path: ['/bad.json'] } });
  await unavailable(t, ctx);
});

t.test('__proto__ and constructor keys stay data; no prototype changes', async (t) => {
  const root = t.testdir();
  put(root, 'a.json', '{"__proto__": {"polluted": true}, "constructor": {"prototype": {"polluted": true}}, "ok": 1}');
  put(root, 'b.json', '{"__proto__": {"second": true}}');
  const { ctx } = await context(root, { heat_local: { path: ['/a.json', '/b.json'] } });
  const value = (await heatLocalCollector.collect(ctx)).pairs[0]?.value as Record<string, unknown>;
  t.equal(Object.getPrototypeOf(value), Object.prototype);
  t.equal((value as { polluted?: unknown }).polluted, undefined);
  t.equal((value as { second?: unknown }).second, undefined);
  t.same(
    Object.getOwnPropertyDescriptor(value, '__proto__')?.value,
    { second: true },
    'later file wins for __proto__ as for any key',
  );
  t.equal(({} as { polluted?: unknown }).polluted, undefined);
  t.same(Object.keys(value), ['__proto__', 'constructor', 'ok']);
});

t.test(
  'the first file is copied, not modified by later merges; the same bytes again are the same document, unchanged',
  async (t) => {
    const root = t.testdir();
    put(root, 'a.json', '{"a": 1}');
    put(root, 'b.json', '{"b": 2}');
    const { ctx } = await context(root, { heat_local: { path: ['/a.json', '/b.json'] } });
    const first = await heatLocalCollector.collect(ctx);
    t.same(first, { pairs: [{ key: 'heat_local', value: { a: 1, b: 2 } }] });
    const second = await heatLocalCollector.collect(ctx);
    t.equal(second.unchanged, true, 'the same bytes: unchanged');
    t.equal(second.pairs, first.pairs, "the last poll's pairs, not parsed again");
    put(root, 'b.json', '{"b": 3, "a": 0}');
    const third = await heatLocalCollector.collect(ctx);
    t.notOk(third.unchanged, 'a file changed');
    t.same(third.pairs, [{ key: 'heat_local', value: { a: 0, b: 3 } }]);
    t.same(first.pairs, [{ key: 'heat_local', value: { a: 1, b: 2 } }], 'the earlier document is not modified');
    put(root, 'b.json', '{"b": 2}');
    const fourth = await heatLocalCollector.collect(ctx);
    t.notOk(fourth.unchanged, 'changed back: a change again');
    t.same(fourth.pairs, first.pairs);
    t.same((await heatLocalCollector.collect(ctx)).unchanged, true);
  },
);

t.test('watchPaths are the configured files', async (t) => {
  const root = t.testdir();
  const { ctx } = await context(root, { heat_local: { path: ['/x', '/y'] } });
  t.same(heatLocalCollector.watchPaths?.(ctx.config), [`${root}/x`, `${root}/y`]);
  t.equal(heatLocalCollector.name, 'heat_local');
});

t.test(
  'a file another user owns, or others can write, or in a directory others can write: insecure, the deployments never run',
  { skip: process.getuid?.() !== 0 && 'needs root to chown' },
  async (t) => {
    const root = t.testdir();
    const file = put(root, 'var/lib/heat-cfntools/cfn-init-data', '{"deployments": []}');
    const { ctx } = await context(root);
    t.ok(await heatLocalCollector.collect(ctx), 'trusted as written by cloud-init');
    const insecure = async (pattern: RegExp) => {
      const err = await heatLocalCollector.collect(ctx).catch((e: unknown) => e);
      t.ok(err instanceof SourceUnavailableError);
      t.match(err, { code: 'ERR_SOURCE_INSECURE', collector: 'heat_local', message: pattern });
    };
    chownSync(file, 65534, 65534);
    await insecure(new RegExp(`^${file} is not trusted: is owned by user 65534`));
    chownSync(file, 0, 0);
    chmodSync(file, 0o666);
    await insecure(/is not trusted: is writable by others \(mode 0666\)/);
    chmodSync(file, 0o600);
    chmodSync(path.dirname(file), 0o777);
    await insecure(new RegExp(`is not trusted: ${path.dirname(file)} is writable by others`));
  },
);
