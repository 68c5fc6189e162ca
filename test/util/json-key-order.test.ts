import t from 'tap';
import { isArrayIndexKey, keepKeyOrder, keysInOrder } from '../../src/util/json-key-order.js';

t.test('isArrayIndexKey: the keys JavaScript lists first', async (t) => {
  for (const key of ['0', '1', '42', '4294967294']) t.ok(isArrayIndexKey(key), key);
  for (const key of ['', '-1', '01', '007', '1.5', '1e3', ' 1', '4294967295', '99999999999', 'a1', '١'])
    t.notOk(isArrayIndexKey(key), JSON.stringify(key));
  // The rule is the engine's own: an index key is listed before a key set earlier.
  for (const key of ['0', '4294967294', '4294967295', '007', '-1']) {
    const object = { b: 1, [key]: 2 };
    t.equal(Object.keys(object)[0] === key, isArrayIndexKey(key), `${key}: as the engine orders it`);
  }
});

t.test('keepKeyOrder and keysInOrder', async (t) => {
  const object: Record<string, number> = { b: 1, 3: 2 };
  t.same(keysInOrder(object), ['3', 'b'], 'nothing recorded: JavaScript order');
  keepKeyOrder(object, ['b', '3']);
  t.same(keysInOrder(object), ['b', '3'], 'the recorded order');
  t.same(Object.keys(object), ['3', 'b'], 'not seen by Object.keys');
  t.equal(JSON.stringify(object), '{"3":2,"b":1}', 'nor by JSON.stringify');
  t.same(keysInOrder({ ...object }), ['3', 'b'], 'a spread copy has JavaScript order');
  object['1'] = 3;
  object['a'] = 4;
  delete object['b'];
  t.same(keysInOrder(object), ['3', '1', 'a'], 'removed keys left out, added ones after the recorded ones');
  keepKeyOrder(object, ['1', '3', 'a']);
  t.same(keysInOrder(object), ['1', '3', 'a'], 'an order that JavaScript keeps anyway replaces the recorded one');
  const plain = { a: 1, b: 2 };
  keepKeyOrder(plain, ['a', 'b']);
  t.same(Object.getOwnPropertySymbols(plain), [], 'no integer-like key: nothing is recorded');
});
