import t from 'tap';
import { MAX_JSON_DEPTH, jsonDepth } from '../../src/util/json-depth.js';

t.test('depth of scalars, containers and nesting', async (t) => {
  t.equal(jsonDepth(1), 0);
  t.equal(jsonDepth(null), 0);
  t.equal(jsonDepth({}), 1);
  t.equal(jsonDepth([[], { a: [1] }]), 3);
  t.equal(jsonDepth(JSON.parse('['.repeat(300) + ']'.repeat(300))), 300);
});

t.test('very deep values are measured without recursion and counting stops past the limit', async (t) => {
  const deep = JSON.parse('['.repeat(200_000) + ']'.repeat(200_000));
  t.equal(jsonDepth(deep), MAX_JSON_DEPTH + 1);
  t.equal(jsonDepth(deep, 10), 10);
});
