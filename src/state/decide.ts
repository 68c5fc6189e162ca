import type { DeploymentRecord } from './record.js';
import { targetOf, type DeploymentState } from './machine.js';

// What a deployment pass does with one deployment of the metadata, decided from what is on disk and nothing else: a
// pure function, so every crash window (the state left after each write of HOOK_RUN_WRITES) is unit-tested without
// processes (test/state/decide.test.ts). The deployment pass (src/deploy/pass.ts) gathers the facts and carries the
// decision out.

/** A hook interrupted this many times (agent killed, machine rebooted while it ran) is reported failed, not re-run. */
export const MAX_HOOK_STARTS = 2;

export interface DecisionFacts {
  /** The stored record; 'unusable' when the file exists but cannot be used (DeploymentRecordError). */
  readonly record: DeploymentRecord | 'unusable' | undefined;
  /** deployed/<id>.json exists. Only looked at when there is no record. */
  readonly deployedFileExists: boolean;
  /** The current boot id (undefined: unreadable). Only looked at for a record awaiting its reboot. */
  readonly bootId: string | undefined;
}

export type Decision =
  /** The record cannot be used: leave everything as it is until the operator clears it. */
  | { readonly action: 'hold' }
  /** No record but a deployed file: an earlier agent deployed it; record it as signalled, never run it. */
  | { readonly action: 'adopt' }
  /** Run the hook; `create`: record it as pending first (a deployment seen for the first time). */
  | { readonly action: 'run'; readonly create: boolean }
  /** Removed, and listed again: back to the state it left from, then decide again from there. */
  | { readonly action: 'restore'; readonly to: DeploymentState; readonly then: Decision }
  /** The hook was interrupted (the record says running): end what it left running, then run it once more. */
  | { readonly action: 'resume-interrupted'; readonly killOrphan: boolean }
  /** Interrupted MAX_HOOK_STARTS times: end what it left running, and signal a failure instead of running it again. */
  | { readonly action: 'fail-interrupted'; readonly killOrphan: boolean }
  /** The reboot it asked for has happened (another boot, or the boot id cannot be read): run it again. */
  | { readonly action: 'run-after-reboot' }
  /** Still the boot that asked, and the reboot command never ran (the agent stopped first): run it now. */
  | { readonly action: 'reboot-now' }
  /** Still the boot that asked, and the reboot command ran: the machine is going down; stop the pass here. */
  | { readonly action: 'wait-for-reboot' }
  /** Nothing to do in the pass (applied, done, signalled, skipped): the outbox and the cycle's end do the rest. */
  | { readonly action: 'keep' };

export function decide(facts: DecisionFacts): Decision {
  const { record } = facts;
  if (record === 'unusable') return { action: 'hold' };
  if (record === undefined) return facts.deployedFileExists ? { action: 'adopt' } : { action: 'run', create: true };
  return decideFor(record, facts.bootId);
}

function decideFor(record: DeploymentRecord, bootId: string | undefined): Decision {
  switch (record.state) {
    case 'pending':
      return { action: 'run', create: false };
    case 'running': {
      const killOrphan = record.hookPid !== undefined && record.hookPidStart !== undefined;
      return record.hookStarts >= MAX_HOOK_STARTS
        ? { action: 'fail-interrupted', killOrphan }
        : { action: 'resume-interrupted', killOrphan };
    }
    case 'awaiting-reboot':
      if (bootId === undefined || bootId !== record.bootId) return { action: 'run-after-reboot' };
      return record.rebootCommandRanAt === undefined ? { action: 'reboot-now' } : { action: 'wait-for-reboot' };
    case 'removed': {
      const to = restoredState(record);
      return { action: 'restore', to, then: decideFor({ ...record, state: to }, bootId) };
    }
    case 'applied':
    case 'done':
    case 'signalled':
    case 'skipped':
      return { action: 'keep' };
    case 'reconverging':
      // A re-run found in progress by a pass (which holds the deploy lock, as every re-run does) was left by a dead
      // agent: the pass ends it before deciding (src/deploy/reconverge/interrupted.ts); it was never a first run.
      return { action: 'keep' };
  }
}

/** What the pass does with a record whose deployment is not in the metadata (which has a `deployments` key). */
export function decideAbsent(record: DeploymentRecord): 'mark-removed' | 'keep' {
  return record.state === 'removed' ? 'keep' : 'mark-removed';
}

/** Whether the facts need the boot id (read from /proc only then: no needless work on the pass). */
export function needsBootId(record: DeploymentRecord): boolean {
  return (
    record.state === 'awaiting-reboot' || (record.state === 'removed' && restoredState(record) === 'awaiting-reboot')
  );
}

/** The state a removed record goes back to when it is listed again (the table's listed-again, machine.ts). */
function restoredState(record: DeploymentRecord): DeploymentState {
  return targetOf(record, 'listed-again') ?? 'pending';
}
