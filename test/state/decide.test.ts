import t from 'tap';
import type { DeploymentRecord } from '../../src/state/record.js';
import { HOOK_RUN_WRITES } from '../../src/state/machine.js';
import {
  decide,
  decideAbsent,
  MAX_HOOK_STARTS,
  needsBootId,
  type Decision,
  type DecisionFacts,
} from '../../src/state/decide.js';

// The pass's decision for one deployment, from what a crash can leave on disk, without processes: the state after
// each write of a hook run (HOOK_RUN_WRITES), then the reboot, removal and damaged-record cases. The process-level
// trials (crash-resume.test.ts, test/e2e/faults/sigkill-trials.test.ts) check the same windows with SIGKILL.

const at = '2026-03-01T00:00:00.000Z';
function record(patch: Partial<DeploymentRecord> = {}): DeploymentRecord {
  return {
    version: 1,
    id: 'd-1',
    name: 'web',
    group: 'script',
    action: 'CREATE',
    state: 'pending',
    hookStarts: 0,
    firstSeenAt: at,
    updatedAt: at,
    signal: { state: 'none', transport: 'NO_SIGNAL', attempts: 0 },
    ...patch,
  };
}
function facts(r: DecisionFacts['record'], more: Partial<DecisionFacts> = {}): DecisionFacts {
  return { record: r, deployedFileExists: false, bootId: 'boot-1', ...more };
}

// What is on disk after each write of one hook run, and what the next pass must do. The notify file is not a fact
// of the decision: a crash between it and `done` runs the hook again (docs/state-machine.md).
const afterWrite: Record<(typeof HOOK_RUN_WRITES)[number], { disk: DecisionFacts; decision: Decision; why: string }> = {
  'record pending': {
    disk: facts(record()),
    decision: { action: 'run', create: false },
    why: 'the hook never started',
  },
  'deployed file': {
    disk: facts(record(), { deployedFileExists: true }),
    decision: { action: 'run', create: false },
    why: 'a pending record wins over the deployed file: not adopted',
  },
  running: {
    disk: facts(record({ state: 'running', hookStarts: 1 }), { deployedFileExists: true }),
    decision: { action: 'resume-interrupted', killOrphan: false },
    why: 'interrupted before its pid was known: run once more',
  },
  'hook pid': {
    disk: facts(record({ state: 'running', hookStarts: 1, hookPid: 4242, hookPidStart: '99' }), {
      deployedFileExists: true,
    }),
    decision: { action: 'resume-interrupted', killOrphan: true },
    why: 'the orphan is ended, then the hook runs once more',
  },
  'notify file': {
    disk: facts(record({ state: 'running', hookStarts: 1, hookPid: 4242, hookPidStart: '99' }), {
      deployedFileExists: true,
    }),
    decision: { action: 'resume-interrupted', killOrphan: true },
    why: 'the result is not in the record yet: run once more',
  },
  'done (result and queued signal)': {
    disk: facts(
      record({ state: 'done', hookStarts: 1, signal: { state: 'pending', transport: 'CFN_SIGNAL', attempts: 0 } }),
      { deployedFileExists: true },
    ),
    decision: { action: 'keep' },
    why: 'never run again; the outbox sends the signal',
  },
  signalled: {
    disk: facts(
      record({ state: 'signalled', hookStarts: 1, signal: { state: 'sent', transport: 'CFN_SIGNAL', attempts: 1 } }),
      { deployedFileExists: true },
    ),
    decision: { action: 'keep' },
    why: 'finished',
  },
};

t.test('a crash after each write of a hook run: what the next pass does', async (t) => {
  t.same(Object.keys(afterWrite), [...HOOK_RUN_WRITES], 'every write of HOOK_RUN_WRITES has its case, in order');
  t.same(decide(facts(undefined)), { action: 'run', create: true }, 'before the first write: a new deployment');
  for (const [write, c] of Object.entries(afterWrite)) t.same(decide(c.disk), c.decision, `after "${write}": ${c.why}`);
});

t.test('interrupted too often, adopted, applied, skipped, held', async (t) => {
  t.same(decide(facts(record({ state: 'running', hookStarts: MAX_HOOK_STARTS }))), {
    action: 'fail-interrupted',
    killOrphan: false,
  });
  t.same(decide(facts(record({ state: 'running', hookStarts: MAX_HOOK_STARTS + 3, hookPid: 7, hookPidStart: '1' }))), {
    action: 'fail-interrupted',
    killOrphan: true,
  });
  t.same(
    decide(facts(record({ state: 'running', hookStarts: 1, hookPid: 7 }))),
    { action: 'resume-interrupted', killOrphan: false },
    'no start time: the pid may be reused, never killed',
  );
  t.same(
    decide(facts(undefined, { deployedFileExists: true })),
    { action: 'adopt' },
    'no record, a deployed file: an earlier agent ran it',
  );
  for (const state of ['applied', 'skipped'] as const)
    t.same(decide(facts(record({ state }))), { action: 'keep' }, state);
  t.same(
    decide(facts('unusable', { deployedFileExists: true })),
    { action: 'hold' },
    'a record that cannot be used is held, never replaced',
  );
});

t.test('awaiting the reboot it asked for', async (t) => {
  const waiting = (more: Partial<DeploymentRecord> = {}) =>
    record({ state: 'awaiting-reboot', bootId: 'boot-1', reboots: 1, ...more });
  t.same(decide(facts(waiting(), { bootId: 'boot-2' })), { action: 'run-after-reboot' }, 'another boot: run again');
  t.same(
    decide(facts(waiting(), { bootId: undefined })),
    { action: 'run-after-reboot' },
    'boot id unreadable: taken as rebooted',
  );
  t.same(
    decide(facts(waiting())),
    { action: 'reboot-now' },
    'same boot, the command never ran (crash between the record and the command)',
  );
  t.same(
    decide(facts(waiting({ rebootCommandRanAt: at }))),
    { action: 'wait-for-reboot' },
    'same boot, command ran: the machine is going down',
  );
  t.ok(needsBootId(waiting()));
  t.ok(needsBootId(record({ state: 'removed', stateBeforeRemoval: 'awaiting-reboot' })));
  t.notOk(needsBootId(record({ state: 'running' })), 'the boot id is read only when needed');
});

t.test('removed, then listed again: back to where it was, then decided from there', async (t) => {
  t.same(decide(facts(record({ state: 'removed', stateBeforeRemoval: 'signalled' }))), {
    action: 'restore',
    to: 'signalled',
    then: { action: 'keep' },
  });
  t.same(
    decide(facts(record({ state: 'removed' }))),
    { action: 'restore', to: 'pending', then: { action: 'run', create: false } },
    'older records without stateBeforeRemoval',
  );
  t.same(
    decide(facts(record({ state: 'removed', stateBeforeRemoval: 'removed' }))),
    { action: 'restore', to: 'pending', then: { action: 'run', create: false } },
    'a damaged one naming removed',
  );
  t.same(decide(facts(record({ state: 'removed', stateBeforeRemoval: 'running', hookStarts: 1 }))), {
    action: 'restore',
    to: 'running',
    then: { action: 'resume-interrupted', killOrphan: false },
  });
  t.same(
    decide(
      facts(record({ state: 'removed', stateBeforeRemoval: 'awaiting-reboot', bootId: 'boot-1' }), {
        bootId: 'boot-9',
      }),
    ),
    { action: 'restore', to: 'awaiting-reboot', then: { action: 'run-after-reboot' } },
  );
  t.equal(decideAbsent(record({ state: 'done' })), 'mark-removed');
  t.equal(decideAbsent(record({ state: 'removed' })), 'keep');
});
