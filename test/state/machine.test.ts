import t from 'tap';
import {
  BEFORE_RECONVERGE,
  BEFORE_REMOVAL,
  DEPLOYMENT_STATES,
  EVENTS,
  isDeploymentState,
  signalMoveWith,
  STATE_MEANINGS,
  targetOf,
  TRANSITION_EVENTS,
  TRANSITIONS,
  type DeploymentState,
  type TransitionEvent,
} from '../../src/state/machine.js';

/** The states with a property, in table order. */
const statesWhere = (property: Exclude<keyof (typeof STATE_MEANINGS)[DeploymentState], 'meaning'>) =>
  DEPLOYMENT_STATES.filter((s) => STATE_MEANINGS[s][property]);
import { SIGNAL_STATES } from '../../src/state/signal-machine.js';
import { statePath } from '../helpers/state-path.js';

// The state machine's table: what each state means to its readers, and the events that move a record.

/** The events that move a record in `from` to `to` (for listed-again: one that was in `to` before removal). */
function eventsFor(from: DeploymentState | undefined, to: DeploymentState): TransitionEvent[] {
  return TRANSITION_EVENTS.filter((e) => targetOf({ state: from, stateBeforeRemoval: to }, e) === to);
}

function isAllowedTransition(from: DeploymentState | undefined, to: DeploymentState): boolean {
  return eventsFor(from, to).length > 0;
}

t.test('every state has a meaning, and the readers see the lists they always had', async (t) => {
  t.same(Object.keys(STATE_MEANINGS).sort(), [...DEPLOYMENT_STATES].sort());
  t.same(
    statesWhere('inProgress'),
    ['pending', 'running', 'awaiting-reboot', 'applied'],
    'status --wait waits for these',
  );
  t.same(statesWhere('holdsSignal'), ['done'], 'the outbox lives in done records');
  t.same(statesWhere('hasResult'), ['done', 'signalled', 'reconverging']);
  t.same(statesWhere('prunable'), ['removed']);
  t.same(statesWhere('terminal'), ['signalled', 'skipped', 'removed']);
  t.same(
    DEPLOYMENT_STATES.filter((s) => !STATE_MEANINGS[s].listed),
    ['removed'],
  );
  for (const s of DEPLOYMENT_STATES)
    t.notOk(STATE_MEANINGS[s].inProgress && STATE_MEANINGS[s].terminal, `${s}: not both waiting and terminal`);
  t.ok(isDeploymentState('done'));
  t.notOk(isDeploymentState('finished'));
  t.notOk(isDeploymentState(undefined));
});

t.test('the hook run, the reboot, removal and rerun are allowed; shortcuts are not', async (t) => {
  const allowed: Array<[DeploymentState | undefined, DeploymentState]> = [
    [undefined, 'pending'],
    [undefined, 'signalled'],
    ['pending', 'running'],
    ['running', 'running'],
    ['running', 'done'],
    ['done', 'signalled'],
    ['running', 'awaiting-reboot'],
    ['awaiting-reboot', 'running'],
    ['awaiting-reboot', 'done'],
    ['pending', 'applied'],
    ['applied', 'done'],
    ['pending', 'done'],
    ['pending', 'skipped'],
    ['signalled', 'removed'],
    ['removed', 'signalled'],
    ['signalled', 'pending'],
    ['removed', 'pending'],
  ];
  for (const [from, to] of allowed) t.ok(isAllowedTransition(from, to), `${from ?? '(new)'} -> ${to}`);
  const refused: Array<[DeploymentState | undefined, DeploymentState]> = [
    [undefined, 'done'],
    [undefined, 'running'],
    ['pending', 'signalled'],
    ['pending', 'awaiting-reboot'],
    ['running', 'pending'],
    ['running', 'signalled'],
    ['signalled', 'done'],
    ['done', 'running'],
    ['skipped', 'done'],
    ['removed', 'removed'],
    ['applied', 'signalled'],
  ];
  for (const [from, to] of refused) t.notOk(isAllowedTransition(from, to), `not ${from ?? '(new)'} -> ${to}`);
  t.same(eventsFor('running', 'done').sort(), ['hook-failed-to-run', 'hook-finished', 'interrupted-too-often']);
  t.same(eventsFor('pending', 'signalled'), []);
});

t.test('the table is consistent: every state is reachable, only terminal states lack a way forward', async (t) => {
  const events = new Set(TRANSITIONS.map((x) => `${x.from ?? '(new)'} ${x.to} ${x.event}`));
  t.equal(events.size, TRANSITIONS.length, 'no transition declared twice');
  for (const s of DEPLOYMENT_STATES) {
    t.ok(statePath('pending', s).length > 0, `${s} reachable from pending`);
    // A re-run on a reconverge interval returns where it started: no way forward either.
    const onward = TRANSITIONS.some(
      (x) =>
        x.from === s &&
        x.to !== s &&
        x.event !== 'rerun' &&
        x.event !== 'left-metadata' &&
        x.event !== 'reconverge-started',
    );
    t.equal(
      onward,
      !STATE_MEANINGS[s].terminal || s === 'removed',
      `${s}: ${STATE_MEANINGS[s].terminal ? 'terminal' : 'moves on'}`,
    );
  }
  t.same(statePath('pending', 'signalled'), ['done', 'signalled']);
});

t.test('each event, from each state it is allowed in, leads to exactly one state', async (t) => {
  const pairs = TRANSITIONS.map((x) => `${x.from ?? '(new)'} ${x.event}`);
  t.equal(new Set(pairs).size, pairs.length, 'no (from, event) pair declared twice');
  for (const event of TRANSITION_EVENTS) {
    const rule = EVENTS[event];
    t.ok(rule.from.length > 0, `${event} is allowed somewhere`);
    t.ok(rule.meaning.length > 0, `${event} says what it means`);
    for (const from of [undefined, ...DEPLOYMENT_STATES]) {
      const at = { state: from, stateBeforeRemoval: 'done' as const };
      // A target read from the record: a record that does not say goes back to done (and this one says done).
      const fromRecord = rule.to === BEFORE_REMOVAL || rule.to === BEFORE_RECONVERGE;
      const expected = rule.from.includes(from) ? (fromRecord ? 'done' : rule.to) : undefined;
      t.equal(targetOf(at, event), expected, `${from ?? '(new)'} --${event}--> ${expected ?? 'refused'}`);
    }
  }
  t.same(
    TRANSITION_EVENTS.filter((e) => EVENTS[e].from.includes(undefined)),
    ['seen', 'adopted'],
    'only these create a record',
  );
});

t.test('listed again: back to the state before removal, from the record; pending when it cannot be used', async (t) => {
  for (const before of DEPLOYMENT_STATES.filter((s) => s !== 'removed' && s !== 'reconverging'))
    t.equal(targetOf({ state: 'removed', stateBeforeRemoval: before }, 'listed-again'), before, `back to ${before}`);
  t.equal(targetOf({ state: 'removed' }, 'listed-again'), 'pending', 'a record from before stateBeforeRemoval');
  t.equal(targetOf({ state: 'removed', stateBeforeRemoval: 'removed' }, 'listed-again'), 'pending', 'a damaged one');
  t.equal(targetOf({ state: 'done', stateBeforeRemoval: 'done' }, 'listed-again'), undefined, 'only from removed');
});

t.test('the signal moves that go with each event', async (t) => {
  t.equal(signalMoveWith('hook-finished', 'none', 'pending'), 'queued');
  t.equal(signalMoveWith('hook-finished', 'none', 'failed'), 'unsendable', 'bad signal inputs');
  t.equal(signalMoveWith('hook-finished', 'none', 'none'), 'kept', 'NO_SIGNAL');
  t.equal(signalMoveWith('hook-finished', 'pending', 'sent'), undefined, 'a result never delivers');
  t.equal(signalMoveWith('signal-delivered', 'pending', 'sent'), 'delivered');
  t.equal(signalMoveWith('signal-delivered', 'pending', 'pending'), undefined, 'signalled only by a delivery');
  t.equal(signalMoveWith('signal-delivered', 'failed', 'failed'), undefined);
  t.equal(signalMoveWith('left-metadata', 'pending', 'cancelled'), 'cancelled');
  t.equal(signalMoveWith('left-metadata', 'failed', 'failed'), 'kept');
  t.equal(signalMoveWith('rerun', 'pending', 'none'), 'reset', "the earlier run's signal is dropped by name");
  for (const event of TRANSITION_EVENTS) {
    for (const from of SIGNAL_STATES) {
      for (const to of SIGNAL_STATES) {
        const move = signalMoveWith(event, from, to);
        if (move === undefined || move === 'kept') continue;
        t.ok(EVENTS[event].signal?.includes(move), `${event}: ${from} -> ${to} by ${move}, which it lists`);
      }
    }
    if (EVENTS[event].signal === undefined)
      t.ok(
        SIGNAL_STATES.every((from) =>
          SIGNAL_STATES.every((to) => (signalMoveWith(event, from, to) !== undefined) === (from === to)),
        ),
        `${event} leaves the signal as it is`,
      );
  }
});

t.test('a re-run: from a finished deployment, back where it started, nothing else in between', async (t) => {
  const ends = ['reconverge-finished', 'reconverge-stopped', 'reconverge-interrupted'] as const;
  for (const from of ['done', 'signalled'] as const) {
    t.equal(targetOf({ state: from }, 'reconverge-started'), 'reconverging', `${from} --reconverge-started-->`);
    for (const end of ends)
      t.equal(targetOf({ state: 'reconverging', reconverge: { from } }, end), from, `${end}: back to ${from}`);
  }
  for (const s of DEPLOYMENT_STATES.filter((x) => x !== 'done' && x !== 'signalled'))
    t.equal(targetOf({ state: s }, 'reconverge-started'), undefined, `no re-run from ${s}`);
  t.equal(targetOf({ state: 'reconverging' }, 'reconverge-finished'), 'done', 'a record that does not say: done');
  t.equal(
    targetOf({ state: 'reconverging', reconverge: { from: 'pending' } }, 'reconverge-finished'),
    'done',
    'nor one naming a state no re-run starts from',
  );
  t.same(
    TRANSITIONS.filter((x) => x.from === 'reconverging').map((x) => x.event),
    ends,
    'a re-run in progress only ends: no removal, no rerun, no result, no signal',
  );
  t.equal(
    targetOf({ state: 'removed', stateBeforeRemoval: 'reconverging' }, 'listed-again'),
    'pending',
    'no record is removed while re-running, so a damaged one saying so starts over',
  );
  t.same(
    TRANSITION_EVENTS.filter((e) => EVENTS[e].quiet === true),
    ['reconverge-started', ...ends],
    "only a re-run's moves are logged at debug (the re-run has its own line)",
  );
  for (const event of ['reconverge-started', ...ends] as const) t.equal(EVENTS[event].signal, undefined);
});
