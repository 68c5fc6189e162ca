import t from 'tap';
import { deepClone, deepMerge, isJsonObject, shallowMerge, type JsonObject } from '../../src/util/json-merge.js';
import { pythonJsonDumps } from '../../src/util/python-json.js';
import { parsePythonJson } from '../../src/util/python-json-parse.js';

// Parsed JSON may carry "__proto__" / "constructor" / "prototype" keys as plain data (JSON.parse makes them own
// properties). A merge must keep them as data and never touch an object's prototype.
const hostile = () =>
  JSON.parse('{"__proto__": {"polluted": true}, "constructor": {"prototype": {"polluted": true}}, "ok": 1}') as Record<
    string,
    unknown
  >;

t.test('isJsonObject', async (t) => {
  t.ok(isJsonObject({}));
  t.ok(isJsonObject(JSON.parse('{"a": 1}')));
  t.notOk(isJsonObject([]));
  t.notOk(isJsonObject(null));
  t.notOk(isJsonObject('x'));
  t.notOk(isJsonObject(1));
  t.notOk(isJsonObject(undefined));
});

t.test('shallowMerge: later keys replace earlier ones, top level only, into target', async (t) => {
  const target = { a: 1, nested: { x: 1, y: 2 }, keep: true };
  const out = shallowMerge(target, { a: 2, nested: { x: 9 }, added: [1] });
  t.equal(out, target, 'returns the target');
  t.same(out, { a: 2, nested: { x: 9 }, keep: true, added: [1] }, 'nested objects are replaced, not merged');
  t.same(Object.keys(out), ['a', 'nested', 'keep', 'added'], 'existing keys keep their position (dict.update)');
});

t.test('shallowMerge keeps __proto__ and constructor as plain data', async (t) => {
  const out = shallowMerge({}, hostile());
  t.equal(Object.getPrototypeOf(out), Object.prototype, 'prototype unchanged');
  t.equal((out as { polluted?: unknown }).polluted, undefined);
  t.ok(Object.prototype.hasOwnProperty.call(out, '__proto__'), '__proto__ is an own data key');
  t.same(Object.getOwnPropertyDescriptor(out, '__proto__')?.value, { polluted: true });
  t.same(Object.keys(out), ['__proto__', 'constructor', 'ok']);
  t.equal(({} as { polluted?: unknown }).polluted, undefined, 'Object.prototype not polluted');
  t.equal(JSON.stringify(out), '{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}},"ok":1}');
});

t.test('deepMerge: objects merge recursively, anything else replaces; inputs untouched', async (t) => {
  const base = { a: { b: 1, c: [1, 2], d: { e: 1 } }, list: [1], scalar: 's', gone: { x: 1 } };
  const incoming = {
    a: { c: [3], d: { f: 2 } },
    list: { now: 'object' },
    scalar: null,
    gone: 'string',
    fresh: { y: 1 },
  };
  const baseCopy = JSON.parse(JSON.stringify(base));
  const incomingCopy = JSON.parse(JSON.stringify(incoming));
  const out = deepMerge(base, incoming);
  t.same(out, {
    a: { b: 1, c: [3], d: { e: 1, f: 2 } },
    list: { now: 'object' },
    scalar: null,
    gone: 'string',
    fresh: { y: 1 },
  });
  t.same(base, baseCopy, 'base not modified');
  t.same(incoming, incomingCopy, 'incoming not modified');
  (out.fresh as { y: number }).y = 99;
  t.equal(incoming.fresh.y, 1, 'values from incoming are copies');
});

t.test('deepMerge with hostile keys on either side never changes a prototype', async (t) => {
  const out = deepMerge(hostile(), hostile());
  t.equal(Object.getPrototypeOf(out), Object.prototype);
  t.equal((out as { polluted?: unknown }).polluted, undefined);
  const merged = deepMerge({ a: 1 }, JSON.parse('{"__proto__": {"a": 2, "b": 3}}') as Record<string, unknown>);
  t.equal(merged.a, 1, 'a __proto__ key does not merge into the object itself');
  t.equal(Object.getPrototypeOf(merged), Object.prototype);
  t.same(Object.getOwnPropertyDescriptor(merged, '__proto__')?.value, { a: 2, b: 3 });
  // A key that exists only on Object.prototype (not own) must not be treated as an existing object to merge into.
  const viaProto = deepMerge({}, JSON.parse('{"constructor": {"name": "x"}}') as Record<string, unknown>);
  t.same(Object.getOwnPropertyDescriptor(viaProto, 'constructor')?.value, { name: 'x' });
  t.equal(Object.prototype.constructor.name, 'Object', 'Object.prototype.constructor untouched');
  t.equal(({} as { b?: unknown }).b, undefined);
});

t.test('deepClone copies deeply and keeps hostile keys as data', async (t) => {
  const src = { a: [{ b: 1 }], c: { d: 'e' } };
  const copy = deepClone(src);
  t.same(copy, src);
  t.not(copy.a, src.a);
  t.not(copy.a[0], src.a[0]);
  t.not(copy.c, src.c);
  const h = deepClone(hostile());
  t.equal(Object.getPrototypeOf(h), Object.prototype);
  t.ok(Object.prototype.hasOwnProperty.call(h, '__proto__'));
  t.equal(deepClone(5), 5);
  t.equal(deepClone(null), null);
});

// Python's dict keeps integer-like keys where they came; merges and clones keep the order a parsed object carries
// (json-key-order.ts), so the merged document is written in os-apply-config's key order.
t.test('merges and clones keep integer-like keys where Python keeps them', async (t) => {
  const dumped = (value: unknown) => pythonJsonDumps(value);
  const base = parsePythonJson('{"b": 1, "3": {"y": 1, "2": 2}}') as JsonObject;
  t.equal(dumped(deepClone(base)), '{"b": 1, "3": {"y": 1, "2": 2}}', 'deepClone');
  const merged = deepMerge(base, parsePythonJson('{"3": {"1": 3, "y": 4}, "a": 5, "0": 6}') as JsonObject);
  t.equal(dumped(merged), '{"b": 1, "3": {"y": 4, "2": 2, "1": 3}, "a": 5, "0": 6}', 'deepMerge: new keys go last');
  t.equal(dumped(base), '{"b": 1, "3": {"y": 1, "2": 2}}', 'deepMerge leaves its inputs as they were');
  const target = parsePythonJson('{"b": 1, "3": 2}') as JsonObject;
  shallowMerge(target, parsePythonJson('{"1": 3, "b": 4}') as JsonObject);
  t.equal(dumped(target), '{"b": 4, "3": 2, "1": 3}', 'shallowMerge: existing keys keep their place');
  shallowMerge(target, { x: 5 });
  t.equal(dumped(target), '{"b": 4, "3": 2, "1": 3, "x": 5}', 'a second update appends after the recorded order');
  const plain = shallowMerge({ b: 1 }, { a: 2 });
  t.equal(dumped(plain), '{"b": 1, "a": 2}', 'no integer-like key: JavaScript order, nothing recorded');
});
