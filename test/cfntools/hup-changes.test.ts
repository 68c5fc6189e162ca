import t from 'tap';
import { pathEvent } from '../../src/cfntools/hup-changes.js';

// The events a cfn-hup hook's path sees between two reads of its resource's metadata.

t.test('added, updated, removed, unchanged; nothing saved before counts as absent', async (t) => {
  const v1 = { init: { config: { files: { '/a': 1 } } }, other: 1 };
  const v2 = { init: { config: { files: { '/a': 2 } } }, other: 1 };
  const keys = ['init', 'config'];
  t.equal(pathEvent(v1, v1, keys), undefined, 'the same value: nothing');
  t.equal(pathEvent(v1, structuredClone(v1), keys), undefined, 'an equal copy: nothing');
  t.equal(pathEvent(v1, v2, keys), 'post.update');
  t.equal(pathEvent(v1, { other: 2 }, keys), 'post.remove');
  t.equal(pathEvent({ other: 1 }, v1, keys), 'post.add');
  t.equal(pathEvent(undefined, v1, keys), 'post.add', 'no copy saved yet');
  t.equal(pathEvent(undefined, { other: 1 }, keys), undefined);
  t.equal(pathEvent(v1, { ...v1, other: 2 }, keys), undefined, 'a change elsewhere in the resource: nothing');
  t.equal(pathEvent(v1, { ...v1, other: 2 }, []), 'post.update', 'the whole metadata changed');
  t.equal(pathEvent({ init: [1] }, { init: [1] }, ['init', '0']), undefined, 'lists are values, not paths');
  t.equal(pathEvent({ a: { b: null } }, { a: {} }, ['a', 'b']), 'post.remove', 'null is a value');
  t.equal(pathEvent({}, { __proto__: 1 }, ['__proto__']), undefined, 'no prototype lookups');
});
