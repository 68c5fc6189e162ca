import t from 'tap';
import { capPhaseOffset, nextSleepSeconds, splaySeconds, withJitter } from '../../src/daemon/schedule.js';

/** The first n sleeps of a fresh loop. */
function sleepSequence(min: number, max: number, n: number): number[] {
  const out: number[] = [];
  let prev: number | undefined;
  for (let i = 0; i < n; i++) {
    prev = nextSleepSeconds(prev, min, max);
    out.push(prev);
  }
  return out;
}

t.test('sleeps double from min up to polling_interval and never shrink (upstream sequence)', async (t) => {
  t.same(sleepSequence(0.5, 6, 7), [0.5, 1, 2, 4, 6, 6, 6]);
  t.same(sleepSequence(1, 30, 7), [1, 2, 4, 8, 16, 30, 30]);
});

t.test('min above max: first sleep is min, later ones max', async (t) => {
  t.same(sleepSequence(10, 5, 3), [10, 5, 5]);
  t.equal(nextSleepSeconds(undefined, 10, 5), 10);
});

t.test('jitter adds at most the configured fraction', async (t) => {
  t.equal(withJitter(10, 0.1, 0), 10);
  t.equal(withJitter(10, 0.1, 0.5), 10.5);
  t.ok(withJitter(10, 0.1, 0.999999) < 11);
  t.equal(withJitter(10, 5, 0.5), 15, 'fraction is capped at 1');
  t.equal(withJitter(10, -1, 0.5), 10, 'negative fraction is no jitter');
});

t.test('splay is a whole number of seconds below splay; fractional splay does not crash (B9)', async (t) => {
  t.equal(splaySeconds(0, 0.7), 0);
  t.equal(splaySeconds(10, 0), 0);
  t.equal(splaySeconds(10, 0.999999), 9);
  t.equal(splaySeconds(2.5, 0.99), 1);
  t.ok(Number.isInteger(splaySeconds(7.3, 0.42)));
});

t.test('the phase is spread once, when the doubling first reaches the cap', async (t) => {
  const seq = sleepSequence(1, 30, 8);
  const offsets = seq.map((next, i) => capPhaseOffset(i === 0 ? undefined : seq[i - 1], next, 30, 0.5));
  t.same(offsets, [0, 0, 0, 0, 0, 15, 0, 0]);
  t.equal(capPhaseOffset(undefined, 30, 30, 0.5), 15, 'min >= max: the first sleep is already the cap');
  t.equal(capPhaseOffset(undefined, 0, 0, 0.5), 0, 'a zero interval gets no offset');
  t.equal(capPhaseOffset(30, 30, 30, 0.9), 0, 'steady state: no offset');
});
