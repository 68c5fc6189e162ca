import t from 'tap';
import { checkDeploymentRecord } from '../../src/state/record.js';

// Records are checked field by field on read: what is wrong is named, values are never shown (they hold secrets).

const good = {
  version: 1,
  id: 'd-1',
  name: 'web',
  group: 'script',
  action: 'CREATE',
  state: 'done',
  hookStarts: 1,
  firstSeenAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:01.000Z',
  exitCode: null,
  rerunHistory: [{ at: '2026-01-01T00:00:00.000Z', fromState: 'signalled', exitCode: 0, signal: 'sent' }],
  signal: {
    state: 'pending',
    transport: 'HEAT_SIGNAL',
    attempts: 1,
    target: {
      transport: 'HEAT_SIGNAL',
      stackId: 's',
      resourceName: 'r',
      authUrl: 'http://127.0.0.1:5000/v3',
      userId: 'u',
      password: 'hunter2-secret',
      projectId: 'p',
    },
    text: '{}',
    history: [{ at: '2026-01-01T00:00:02.000Z', outcome: 'retry', status: 503, error: 'HTTP 503' }],
  },
};

function check(record: unknown, id = 'd-1') {
  return checkDeploymentRecord(typeof record === 'string' ? record : JSON.stringify(record), id);
}

t.test('a whole record, and a record of the first release (only the fields it had), read as they are', async (t) => {
  t.same(check(good), { ok: true, record: good });
  const first = {
    version: 1,
    id: 'd-1',
    name: 'n',
    group: 'g',
    action: 'CREATE',
    state: 'signalled',
    hookStarts: 0,
    firstSeenAt: 'x',
    updatedAt: 'y',
    signal: { state: 'sent', transport: 'CFN_SIGNAL', attempts: 1 },
  };
  t.ok(check(first).ok);
});

t.test('each kind of damage is named, field by field', async (t) => {
  const cases: Array<[string, unknown, string]> = [
    ['cut short', '{"version": 1, "id": "d-', 'it is not JSON (cut short or overwritten)'],
    ['a list', '[]', 'it is not a JSON object'],
    [
      'a later release',
      { ...good, version: 2 },
      'it has version 2, and this agent reads version 1 (written by another release of the agent)',
    ],
    ['no version', { ...good, version: undefined }, 'it has version null'],
    ['another id', { ...good, id: 'd-2' }, 'its id is "d-2", not the "d-1" of its file name'],
    ['unknown state', { ...good, state: 'finished' }, 'field state should be a deployment state, not a string'],
    ['a signal state as state', { ...good, state: 'sent' }, 'field state should be a deployment state, not "sent"'],
    ['missing name', { ...good, name: undefined }, 'field name is missing'],
    ['negative starts', { ...good, hookStarts: -1 }, 'field hookStarts should be a count, not the number -1'],
    ['fractional starts', { ...good, hookStarts: 1.5 }, 'field hookStarts should be a count, not a fraction'],
    ['exit code text', { ...good, exitCode: '0' }, 'field exitCode should be a number or null, not a string'],
    ['failed as text', { ...good, failed: 'no' }, 'field failed should be true or false, not a string'],
    ['bad pid', { ...good, hookPid: 0 }, 'field hookPid should be a process id, not the number 0'],
    [
      'bad state before removal',
      { ...good, stateBeforeRemoval: 'gone' },
      'field stateBeforeRemoval should be a deployment state',
    ],
    [
      'bad rerun history',
      { ...good, rerunHistory: [{ at: 'x' }] },
      'field rerunHistory should be a list of rerun entries, not a list',
    ],
    ['no signal', { ...good, signal: undefined }, 'field signal is missing'],
    ['signal a list', { ...good, signal: [] }, 'field signal should be an object, not a list'],
    [
      'bad signal state',
      { ...good, signal: { ...good.signal, state: 'lost' } },
      'field signal.state should be one of none, pending, sent, failed, cancelled, not a string',
    ],
    [
      'bad transport',
      { ...good, signal: { ...good.signal, transport: 'SMOKE' } },
      'field signal.transport should be one of',
    ],
    [
      'bad attempts',
      { ...good, signal: { ...good.signal, attempts: null } },
      'field signal.attempts should be a count, not null',
    ],
    [
      'bad history',
      { ...good, signal: { ...good.signal, history: [{ at: 'x', outcome: 'maybe' }] } },
      'field signal.history should be a list of signal attempts',
    ],
    [
      'target of another transport',
      {
        ...good,
        signal: { ...good.signal, target: { transport: 'CFN_SIGNAL', url: 'http://127.0.0.1/', verb: 'POST' } },
      },
      'field signal.target.transport is "CFN_SIGNAL", not the signal\'s HEAT_SIGNAL',
    ],
    [
      'target without password',
      { ...good, signal: { ...good.signal, target: { ...good.signal.target, password: 7 } } },
      'field signal.target.password should be a string',
    ],
    [
      'target a signed URL string',
      { ...good, signal: { ...good.signal, target: 'http://127.0.0.1/?Signature=hunter2-secret' } },
      'field signal.target should be an object, not a string',
    ],
  ];
  for (const [what, record, problem] of cases) {
    const result = check(record);
    t.equal(result.ok, false, what);
    if (!result.ok) {
      t.match(result.problem, problem, what);
      t.notMatch(result.problem, /hunter2/, `${what}: no secret in the problem`);
    }
  }
});
