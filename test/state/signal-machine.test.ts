import t from 'tap';
import {
  isSignalState,
  moveSignal,
  SIGNAL_EVENT_NAMES,
  SIGNAL_EVENTS,
  SIGNAL_STATES,
  signalEventFor,
  signalTarget,
  type SignalEvent,
  type SignalState,
} from '../../src/state/signal-machine.js';

// The signal's table: every event from every state leads to the table's one state or is refused.

// The table written out once more, by hand: a change to the table must change this too.
const EXPECTED: Record<SignalEvent, Partial<Record<SignalState, SignalState>>> = {
  queued: { none: 'pending', sent: 'pending', failed: 'pending', cancelled: 'pending' },
  unsendable: { none: 'failed', pending: 'failed', sent: 'failed', failed: 'failed', cancelled: 'failed' },
  'attempt-failed': { pending: 'pending' },
  delivered: { pending: 'sent' },
  'gave-up': { pending: 'failed' },
  cancelled: { pending: 'cancelled' },
  reset: { none: 'none', pending: 'none', sent: 'none', failed: 'none', cancelled: 'none' },
};

t.test('every event from every state: the one state it leads to, or refused', async (t) => {
  t.same([...SIGNAL_EVENT_NAMES].sort(), Object.keys(EXPECTED).sort());
  for (const event of SIGNAL_EVENT_NAMES) {
    t.ok(SIGNAL_EVENTS[event].meaning.length > 0, `${event} says what it means`);
    for (const from of SIGNAL_STATES) {
      const expected = EXPECTED[event][from];
      t.equal(signalTarget(from, event), expected, `${from} --${event}--> ${expected ?? 'refused'}`);
      if (expected === undefined)
        t.throws(() => moveSignal('s-1', from, event), {
          code: 'ERR_SIGNAL_TRANSITION',
          name: 'SignalTransitionError',
          signalId: 's-1',
          from,
          event,
          message: `signal s-1 cannot take the event ${event} in state ${from}: the signal state machine has no such transition; nothing was written (this is a defect of the agent: please report it with the log)`,
        });
      else t.equal(moveSignal('s-1', from, event), expected);
    }
  }
});

t.test('a pending signal is never replaced by a new one: it is delivered, given up, cancelled or reset', async (t) => {
  t.equal(signalTarget('pending', 'queued'), undefined);
  t.same(SIGNAL_EVENT_NAMES.filter((e) => signalTarget('pending', e) !== undefined).sort(), [
    'attempt-failed',
    'cancelled',
    'delivered',
    'gave-up',
    'reset',
    'unsendable',
  ]);
});

t.test('the event of a move, among those allowed', async (t) => {
  t.equal(signalEventFor('none', 'pending', ['queued', 'unsendable', 'reset']), 'queued');
  t.equal(signalEventFor('none', 'failed', ['queued', 'unsendable', 'reset']), 'unsendable');
  t.equal(signalEventFor('pending', 'sent', ['queued', 'unsendable', 'reset']), undefined);
  t.equal(signalEventFor('pending', 'sent', []), undefined);
  t.ok(isSignalState('cancelled'));
  t.notOk(isSignalState('done'));
});
