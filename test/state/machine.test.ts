import t from 'tap';
import {
  DEPLOYMENT_STATES,
  eventsFor,
  isAllowedTransition,
  isDeploymentState,
  STATE_MEANINGS,
  statesWhere,
  TRANSITIONS,
  type DeploymentState,
} from '../../src/state/machine.js';
import { statePath } from '../helpers/state-path.js';

// The state machine's table: what each state means to its readers, and the moves the agent may make.

t.test('every state has a meaning, and the readers see the lists they always had', async (t) => {
  t.same(Object.keys(STATE_MEANINGS).sort(), [...DEPLOYMENT_STATES].sort());
  t.same(
    statesWhere('inProgress'),
    ['pending', 'running', 'awaiting-reboot', 'applied'],
    'status --wait waits for these',
  );
  t.same(statesWhere('holdsSignal'), ['done'], 'the outbox lives in done records');
  t.same(statesWhere('hasResult'), ['done', 'signalled']);
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
    const onward = TRANSITIONS.some(
      (x) => x.from === s && x.to !== s && x.event !== 'rerun' && x.event !== 'left-metadata',
    );
    t.equal(
      onward,
      !STATE_MEANINGS[s].terminal || s === 'removed',
      `${s}: ${STATE_MEANINGS[s].terminal ? 'terminal' : 'moves on'}`,
    );
  }
  t.same(statePath('pending', 'signalled'), ['done', 'signalled']);
});
