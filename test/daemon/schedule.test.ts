import t from 'tap';
import {
  capPhaseOffset,
  nextSleepSeconds,
  pollSleep,
  splaySeconds,
  withJitter,
  type PollStep,
} from '../../src/daemon/schedule.js';

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

/** The steps of a loop whose cycles signalled Heat where `signalled` says (one entry per cycle). */
function stepsWith(signalled: readonly boolean[], afterSignal: boolean, min = 1, max = 30): number[] {
  const timing = { min, max, jitter: 0, afterSignal };
  const out: number[] = [];
  let prev: PollStep | undefined;
  for (const s of signalled) {
    prev = pollSleep(prev, timing, s, () => 0).step;
    out.push(prev.sleep);
  }
  return out;
}

const idle = (n: number) => Array.from({ length: n }, () => false);

t.test('an idle server follows the upstream sequence and settles at polling_interval', async (t) => {
  t.same(stepsWith(idle(8), true), [1, 2, 4, 8, 16, 30, 30, 30]);
  t.same(stepsWith(idle(8), true), stepsWith(idle(8), false), 'the option changes nothing while nothing is signalled');
});

t.test(
  'after a signal the sleeps stay at min_polling_interval for three polls, then double back to polling_interval',
  async (t) => {
    const cycles = [...idle(6), true, ...idle(8)];
    t.same(stepsWith(cycles, true), [1, 2, 4, 8, 16, 30, 1, 1, 1, 2, 4, 8, 16, 30, 30]);
    t.same(
      stepsWith([false, false, true, false, true, false, false, false], true),
      [1, 2, 1, 1, 1, 1, 1, 2],
      'a signal while held at min holds again for three polls',
    );
    t.same(
      stepsWith([true, true, true, false, false, false], true),
      [1, 1, 1, 1, 1, 2],
      'each signalling cycle restarts',
    );
    t.equal(nextSleepSeconds(30, 1, 30, true), 1);
    t.same(
      stepsWith([false, true, false, false, false], true, 10, 5),
      [10, 10, 10, 10, 5],
      'min above max: held at min',
    );
    t.same(
      stepsWith([...idle(3), true, ...idle(5)], true, 0.5, 6),
      [0.5, 1, 2, 0.5, 0.5, 0.5, 1, 2, 4],
      'other intervals: the same three polls at min',
    );
  },
);

t.test('poll_after_signal = false keeps the upstream sequence that never shrinks', async (t) => {
  t.same(stepsWith([...idle(6), true, ...idle(2)], false), [1, 2, 4, 8, 16, 30, 30, 30, 30]);
  t.same(stepsWith([true, true, true, true], false), [1, 2, 4, 8]);
});

t.test('jitter and the phase spreading stay within their bounds after a restart', async (t) => {
  const timing = { min: 1, max: 30, jitter: 0.1, afterSignal: true };
  const high = () => 0.999999;
  const at = (sleep: number): PollStep => ({ sleep, atMinLeft: 0 });
  const restarted = pollSleep(at(30), timing, true, high);
  t.equal(restarted.step.sleep, 1);
  t.ok(restarted.seconds >= 1 && restarted.seconds < 1.1, 'up to 10% jitter, no phase offset below the cap');
  const held = pollSleep(restarted.step, timing, false, high);
  t.equal(held.step.sleep, 1);
  t.ok(held.seconds >= 1 && held.seconds < 1.1, 'held at min: jitter only');
  const capped = pollSleep(at(16), timing, false, high);
  t.equal(capped.step.sleep, 30);
  t.ok(
    capped.seconds >= 30 && capped.seconds < 30 * 1.1 + 30,
    'the cap reached again: one spread of up to an interval',
  );
  const steady = pollSleep(at(30), timing, false, high);
  t.ok(steady.seconds >= 30 && steady.seconds < 33, 'steady state: jitter only');
  t.equal(pollSleep(at(30), { ...timing, jitter: 0 }, false, high).seconds, 30, 'no jitter: exactly polling_interval');
});

t.test('an idle fleet polls no more often than upstream over a long run', async (t) => {
  // Sum of sleeps over 1000 idle cycles is the same with and without the option: no extra requests.
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  t.equal(sum(stepsWith(idle(1000), true)), sum(stepsWith(idle(1000), false)));
});
