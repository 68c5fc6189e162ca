import t from 'tap';
import { jsonEqual, jsonIdentical } from '../../src/util/json-equal.js';

t.test('equal values', async (t) => {
  t.ok(jsonEqual(1, 1));
  t.ok(jsonEqual('a', 'a'));
  t.ok(jsonEqual(null, null));
  t.ok(jsonEqual(true, true));
  t.ok(jsonEqual([], []));
  t.ok(jsonEqual({}, {}));
  t.ok(jsonEqual({ a: [1, { b: null }] }, { a: [1, { b: null }] }));
  t.ok(jsonEqual(1, 1.0), '1 and 1.0 are the same number in JSON text as parsed here');
});

t.test('object key order is ignored (upstream: reordered keys are unchanged)', async (t) => {
  t.ok(jsonEqual(JSON.parse('{"a": 1, "b": {"x": 1, "y": 2}}'), JSON.parse('{"b": {"y": 2, "x": 1}, "a": 1}')));
});

t.test('list order matters', async (t) => {
  t.notOk(jsonEqual([1, 2], [2, 1]));
  t.notOk(jsonEqual([1, 2], [1, 2, 3]));
  t.notOk(jsonEqual([1, 2, 3], [1, 2]));
});

t.test('B14 fixed: true and 1, false and 0, null and missing all differ', async (t) => {
  t.notOk(jsonEqual(1, true));
  t.notOk(jsonEqual(true, 1));
  t.notOk(jsonEqual(0, false));
  t.notOk(jsonEqual({ a: 1 }, { a: true }));
  t.notOk(jsonEqual('1', 1));
  t.notOk(jsonEqual({ a: null }, {}));
  t.notOk(jsonEqual({}, { a: null }));
  t.notOk(jsonEqual({ a: undefined }, { b: undefined }), 'same key count, different keys');
});

t.test('containers of different kinds differ', async (t) => {
  t.notOk(jsonEqual([], {}));
  t.notOk(jsonEqual({}, []));
  t.notOk(jsonEqual({ 0: 'a' }, ['a']));
  t.notOk(jsonEqual(null, {}));
  t.notOk(jsonEqual({}, null));
  t.notOk(jsonEqual(null, 0));
});

t.test('an own key is required: inherited names do not count', async (t) => {
  t.notOk(jsonEqual({ constructor: Object }, { toString: Object }));
  t.notOk(jsonEqual(JSON.parse('{"__proto__": 1}'), JSON.parse('{"other": 1}')));
  t.ok(jsonEqual(JSON.parse('{"__proto__": {"a": 1}}'), JSON.parse('{"__proto__": {"a": 1}}')));
});

t.test('jsonIdentical: equal values with every key in the same order, at every depth', async (t) => {
  t.ok(jsonIdentical({ a: 1, b: { x: [1, { y: null }] } }, { a: 1, b: { x: [1, { y: null }] } }));
  t.ok(jsonIdentical('s', 's'));
  t.ok(jsonIdentical([], []));
  t.notOk(jsonIdentical({ a: 1, b: 2 }, { b: 2, a: 1 }), 'top-level order');
  t.notOk(jsonIdentical({ n: { x: 1, y: 2 } }, { n: { y: 2, x: 1 } }), 'nested order');
  t.notOk(jsonIdentical([{ x: 1, y: 2 }], [{ y: 2, x: 1 }]), 'order inside a list');
  t.notOk(jsonIdentical({ a: 1 }, { a: 1, b: 2 }));
  t.notOk(jsonIdentical({ a: 1, b: 2 }, { a: 1 }));
  t.notOk(jsonIdentical({ a: true }, { a: 1 }));
  t.notOk(jsonIdentical([1, 2], [2, 1]));
  t.notOk(jsonIdentical({}, []));
});
