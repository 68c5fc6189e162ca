import t from 'tap';
import { after, failuresOf, has, idsOf, step, stopsPass, type Effect } from '../../src/deploy/effects.js';

// The effects a pass counts its report from: values, in the order the steps returned them.

const failure = (id: string) => ({ id, name: `res-${id}`, reason: 'failed' });

t.test('ids and failures of each kind, in order; what stops a pass', async (t) => {
  const effects: Effect[] = [
    { kind: 'ran', id: 'a' },
    { kind: 'failed', failure: failure('a') },
    { kind: 'signal-attempted', id: 'a' },
    { kind: 'held', failure: failure('b') },
    { kind: 'skipped', id: 'c' },
    { kind: 'ran', id: 'd' },
    { kind: 'removed', id: 'e' },
  ];
  t.same(idsOf(effects, 'ran'), ['a', 'd']);
  t.same(idsOf(effects, 'skipped'), ['c']);
  t.same(idsOf(effects, 'removed'), ['e']);
  t.same(idsOf(effects, 'signal-attempted'), ['a']);
  t.same(failuresOf(effects, 'failed'), [failure('a')]);
  t.same(failuresOf(effects, 'held'), [failure('b')]);
  t.notOk(stopsPass(effects));
  t.ok(stopsPass([...effects, { kind: 'interrupted' }]), 'a shutdown');
  t.ok(stopsPass([{ kind: 'awaiting-reboot' }]), 'the reboot');
  t.ok(has(effects, 'held'));
  t.notOk(has(effects, 'interrupted'));
});

t.test('a step keeps its record; after() puts earlier effects first', async (t) => {
  const held = step(undefined, { kind: 'held', failure: failure('x') });
  t.same(held, { record: undefined, effects: [{ kind: 'held', failure: failure('x') }] });
  const later = after([{ kind: 'ran', id: 'x' }], step(undefined, { kind: 'interrupted' }));
  t.same(later.effects, [{ kind: 'ran', id: 'x' }, { kind: 'interrupted' }]);
});
