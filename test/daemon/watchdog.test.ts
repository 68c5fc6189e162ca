import t from 'tap';
import { runProcess } from '../../src/util/process-group.js';
import { LoopWatchdog } from '../../src/daemon/watchdog.js';

// The watchdog feeds only while the poll loop is within what it promised; time is a test clock, so nothing here
// depends on how fast the machine is.

function clocked() {
  let now = 1_000_000;
  let feeds = 0;
  const dog = new LoopWatchdog({ intervalMs: 500, feed: () => feeds++, now: () => now });
  return { dog, advance: (ms: number) => (now += ms), feeds: () => feeds };
}

t.test(
  'a loop that keeps its promise is fed; one stuck past it is not (systemd then restarts the agent)',
  async (t) => {
    const { dog, advance, feeds } = clocked();
    dog.progress(60_000, 60_000); // a cycle starts: a minute to make progress
    for (let i = 0; i < 120; i++) {
      advance(500);
      dog.tick();
    }
    t.equal(feeds(), 120, 'fed at every look for the whole budget');
    advance(500);
    t.equal(dog.tick(), false, 'the cycle is stuck: no feed');
    advance(3_600_000);
    t.equal(dog.tick(), false, 'and none later');
    dog.progress(1000, 60_000); // the loop moved on (a late step): fed again
    t.equal(dog.tick(), true);
  },
);

t.test('a sleep is a promise: fed until the sleep and the stall budget are over', async (t) => {
  const { dog, advance } = clocked();
  dog.progress(30_000 + 10_000, 10_000);
  advance(39_999);
  t.equal(dog.tick(), true);
  advance(2);
  t.equal(dog.tick(), false);
});

t.test(
  'a long hook is not a stall: a process extends the promise to its timeout; none without a timeout',
  async (t) => {
    const { dog, advance } = clocked();
    dog.progress(10_000, 10_000);
    dog.started(101, 3_600_000); // an hour's deployment timeout, far beyond the stall budget
    advance(3_600_000 + 9_000);
    t.equal(dog.tick(), true, 'within the timeout and the budget after it');
    advance(2_000);
    t.equal(dog.tick(), false, 'a process past its timeout and the kill: stuck');
    dog.ended(101);
    t.equal(dog.tick(), true, 'its end is progress');
    advance(10_001);
    t.equal(dog.tick(), false);
    dog.started(102, 0); // hook_timeout = 0: the operator allowed it to run for ever
    advance(365 * 86_400_000);
    t.equal(dog.tick(), true);
    dog.ended(102);
    advance(10_001);
    t.equal(dog.tick(), false);
  },
);

t.test('started, it observes the real processes the agent starts', async (t) => {
  let now = 0;
  const dog = new LoopWatchdog({ intervalMs: 60_000, feed: () => undefined, now: () => now });
  dog.start();
  t.teardown(() => dog.stop());
  dog.progress(1000, 1000);
  now = 5000;
  t.equal(dog.healthy(), false);
  await runProcess({ file: '/bin/true', timeoutMs: 10_000 });
  t.equal(dog.healthy(), true, 'a process started and ended: progress');
  dog.stop();
  now = 20_000;
  await runProcess({ file: '/bin/true', timeoutMs: 10_000 });
  t.equal(dog.healthy(), false, 'stopped: processes no longer observed');
});
