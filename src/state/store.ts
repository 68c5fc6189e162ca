import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { AgentConfig } from '../config/options.js';
import type { Logger } from '../log/logger.js';
import type { JsonObject } from '../util/json-merge.js';
import { writeFilesAtomic } from '../util/atomic-write.js';
import { pythonJsonDumps } from '../util/python-json.js';
import { writeConsoleLine } from './console-line.js';
import { DeploymentRecordError, stateError } from './errors.js';
import { checkDeploymentRecord, type DeploymentRecord, type SignalRecord } from './record.js';
import { type CreationEvent, type DeploymentState, type TransitionEvent } from './machine.js';
import type { SignalEvent } from './signal-machine.js';
import { readStateFile, writeStateFile } from './state-file.js';
import { RebootMarks, REBOOT_MARKS_DIR } from './reboot-marks.js';
import { RecordBatch } from './record-batch.js';
import { logTransition, type CheckedRecordMove } from './transition-log.js';
import { listRecords, type UnusableLogging } from './record-list.js';
import { checkMove, checkNote, checkSignalInPlace, type MoveStart, type StateNote } from './write-checks.js';

// Durable per-deployment state: <state_dir>/deployments/<id>.json, one record per deployment, rewritten atomically
// (fsync, rename) at every step, so whatever instant the agent dies at, the record says what is left to do. A record
// changes state only by an event: the state machine (machine.ts, signal-machine.ts; docs/state-machine.md) gives the
// state the event leads to and the moves of its signal that may go with it, and a write it does not allow is refused
// before anything reaches the disk. Every read is checked field by field (record.ts).
//
// Next to it, the upstream files in [deploy] deployed_dir: <id>.json (the deployment, written before the hook runs,
// as heat-config does) and <id>.notify.json (the signal, written after the hook), both 0600, indent 2. Upstream tools
// that test for <id>.json see the same deployments as deployed.

export { DEPLOYMENT_STATES, type DeploymentState } from './machine.js';
export {
  RERUN_HISTORY_MAX,
  SIGNAL_HISTORY_MAX,
  type DeploymentRecord,
  type ReconvergeOutcome,
  type ReconvergeRecord,
  type ReconvergeResult,
  type RerunEntry,
  type SignalAttempt,
  type SignalRecord,
  type SignalState,
} from './record.js';

/** The moves of records: the store's, each written at once, or a batch's (record-batch.ts), written together. */
export type RecordMover = Pick<StateStore, 'create' | 'transition'>;

export type TransitionListener = (record: DeploymentRecord, from: DeploymentState | undefined) => void | Promise<void>;

/** What a transition may change besides the state, which the event gives. */
export type RecordPatch = Partial<Omit<DeploymentRecord, 'version' | 'id' | 'state'>>;

export type { StateNote } from './write-checks.js';
export type { CheckedRecordMove } from './transition-log.js';

/** The fields a new record takes from its deployment. */
export type NewRecordFields = Pick<DeploymentRecord, 'id' | 'name' | 'group' | 'action'>;

/** A record as stored: indent 2, one trailing newline. */
export function recordText(record: DeploymentRecord): string {
  return `${JSON.stringify(record, null, 2)}\n`;
}

/** Where create() starts from (a batched one too): no state, no signal. */
export const NEW_RECORD_START = (id: string): MoveStart => ({ id, state: undefined, signal: { state: 'none' } });

const DIR_MODE = 0o700;

export class StateStore {
  readonly recordsDir: string;
  /** Which records await a reboot (reboot-marks.ts): marked before such a record is written, unmarked after. */
  readonly rebootMarks: RebootMarks;

  constructor(
    stateDir: string,
    readonly deployedDir: string,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
    private readonly onTransition?: TransitionListener,
  ) {
    this.recordsDir = path.join(stateDir, 'deployments');
    this.rebootMarks = new RebootMarks(path.join(stateDir, REBOOT_MARKS_DIR));
  }

  async init(): Promise<void> {
    for (const dir of [this.recordsDir, this.deployedDir]) {
      try {
        await fs.mkdir(dir, { recursive: true, mode: DIR_MODE });
      } catch (err) {
        throw stateError('create the directory', dir, err);
      }
    }
  }

  timestamp(): string {
    return new Date(this.now()).toISOString();
  }

  recordPath(id: string): string {
    return path.join(this.recordsDir, `${id}.json`);
  }

  /** <state_dir>/reconverge/<id>.json: the output of the deployment's last re-run (never sent to Heat). */
  reconvergePath(id: string): string {
    return path.join(path.dirname(this.recordsDir), 'reconverge', `${id}.json`);
  }

  deployedPath(id: string): string {
    return path.join(this.deployedDir, `${id}.json`);
  }

  notifyPath(id: string): string {
    return path.join(this.deployedDir, `${id}.notify.json`);
  }

  /**
   * The record of a deployment, or undefined when there is none. A record that cannot be used (record.ts)
   * throws a DeploymentRecordError and stays where it is, for the operator (docs/state-machine.md: recovery).
   */
  async read(id: string): Promise<DeploymentRecord | undefined> {
    const text = await readStateFile(this.recordPath(id));
    return text === undefined ? undefined : this.parse(id, text);
  }

  /** A record's text checked (record.ts); a DeploymentRecordError when it cannot be used. */
  private parse(id: string, text: string): DeploymentRecord {
    const check = checkDeploymentRecord(text, id);
    if (!check.ok) throw new DeploymentRecordError(id, this.recordPath(id), check.problem);
    return check.record;
  }

  /**
   * Every record, in no particular order, and the errors of those that cannot be used, each logged (record-list.ts):
   * as an error for the deployment pass that holds them ('hold'), a warning for readers ('ignore'), not at all for the
   * outbox, which runs between polls and would repeat the pass's error every few seconds ('quiet').
   */
  listAll(mode: UnusableLogging = 'hold'): Promise<{ records: DeploymentRecord[]; unusable: DeploymentRecordError[] }> {
    return listRecords(this.recordsDir, (id, text) => this.parse(id, text), this.log, mode);
  }

  /** Every usable record, in no particular order (see listAll; readOnly: 'ignore', else 'hold'). */
  async list(readOnly = false): Promise<DeploymentRecord[]> {
    return (await this.listAll(readOnly ? 'ignore' : 'hold')).records;
  }

  /** Record a deployment seen for the first time: `seen` puts it in pending, `adopted` in signalled. */
  async create(
    fields: NewRecordFields,
    event: CreationEvent = 'seen',
    patch: RecordPatch = {},
    logFields: Record<string, unknown> = {},
  ): Promise<DeploymentRecord> {
    // A new record starts from no state, with no signal.
    return this.move(NEW_RECORD_START(fields.id), event, this.newRecord(fields, patch), logFields);
  }

  /** The record create() starts from, before its event gives it a state. */
  newRecord(fields: NewRecordFields, patch: RecordPatch = {}): DeploymentRecord {
    const at = this.timestamp();
    return {
      version: 1,
      ...fields,
      state: 'pending',
      hookStarts: 0,
      firstSeenAt: at,
      updatedAt: at,
      signal: { state: 'none', transport: 'NO_SIGNAL', attempts: 0 },
      ...patch,
    };
  }

  /**
   * Writes made durable together (record-batch.ts): the moves are checked at once, as here, and written, logged and
   * announced when the batch is committed.
   */
  batch(): RecordBatch {
    return new RecordBatch(this);
  }

  /**
   * Move a record by `event`: the state machine gives the state it leads to, and the patch's signal must move the
   * way the event allows. Written durably first, then logged (one line per transition); an event the record's state
   * does not allow is refused before anything is written.
   */
  async transition(
    record: DeploymentRecord,
    event: TransitionEvent,
    patch: RecordPatch = {},
    logFields: Record<string, unknown> = {},
  ): Promise<DeploymentRecord> {
    return this.move(record, event, { ...record, ...patch }, logFields, record.failed === true);
  }

  /**
   * A move of the record's signal while the deployment stays where it is (an attempt that failed, gave up or could
   * not be made): `signal` replaces the record's, in the state the event leads to. Refused unless the deployment's
   * state holds its signal and the signal table has the move. Not a transition: not logged, no listener call.
   */
  async moveSignal(
    record: DeploymentRecord,
    event: SignalEvent,
    signal: Omit<SignalRecord, 'state'>,
    patch: { lastError?: string } = {},
  ): Promise<DeploymentRecord> {
    const to = checkSignalInPlace(record, event);
    return this.write({ ...record, ...patch, signal: { ...signal, state: to } });
  }

  /** A fact of the record's current state that is not a move (the hook's pid, when the reboot command ran). */
  async note(record: DeploymentRecord, facts: StateNote): Promise<DeploymentRecord> {
    checkNote(record, facts);
    return this.write({ ...record, ...facts });
  }

  /** `next` checked against the table for `event` from `record`, then written and logged. */
  private async move(
    record: MoveStart,
    event: TransitionEvent,
    next: DeploymentRecord,
    logFields: Record<string, unknown>,
    failedBefore = false,
  ): Promise<DeploymentRecord> {
    const move = this.checkedMove(record, event, next, logFields, failedBefore);
    await this.withRebootMarks([move], () =>
      writeStateFile(this.recordPath(move.written.id), recordText(move.written)),
    );
    await this.announce(move);
    return move.written;
  }

  /**
   * `write` of the records `moves` lead to, between the reboot marks they need: a record entering awaiting-reboot is
   * marked before it is written, one leaving it unmarked after (reboot-marks.ts).
   */
  async withRebootMarks(moves: readonly CheckedRecordMove[], write: () => Promise<void>): Promise<void> {
    const last = new Map(moves.map((m) => [m.written.id, m.written.state]));
    const left = new Set(moves.filter((m) => m.from === 'awaiting-reboot').map((m) => m.written.id));
    for (const [id, state] of last) if (state === 'awaiting-reboot') await this.rebootMarks.mark(id);
    await write();
    for (const id of left) if (last.get(id) !== 'awaiting-reboot') await this.rebootMarks.unmark(id);
  }

  /** A move the state machine allows, with the record it leads to (not yet written); throws for any other. */
  checkedMove(
    record: MoveStart,
    event: TransitionEvent,
    next: DeploymentRecord,
    logFields: Record<string, unknown> = {},
    failedBefore = false,
  ): CheckedRecordMove {
    const { to, signal: signalMove } = checkMove(record, event, next.signal.state);
    const written = { ...next, state: to, updatedAt: this.timestamp() };
    return { from: record.state, event, written, signalMove, logFields, failedBefore };
  }

  /** A move on disk: its log line (one per transition), then the transition listener. */
  async announce(move: CheckedRecordMove): Promise<void> {
    logTransition(this.log, move);
    await this.onTransition?.(move.written, move.from);
  }

  private async write(record: DeploymentRecord): Promise<DeploymentRecord> {
    const next = { ...record, updatedAt: this.timestamp() };
    await writeStateFile(this.recordPath(record.id), recordText(next));
    return next;
  }

  async hasDeployed(id: string): Promise<boolean> {
    try {
      await fs.lstat(this.deployedPath(id));
      return true;
    } catch {
      return false;
    }
  }

  /** deployed/<id>.json: the deployment as the hook receives it, upstream's format (indent 2, ASCII-escaped). */
  async writeDeployed(id: string, document: JsonObject): Promise<void> {
    await writeStateFile(this.deployedPath(id), pythonJsonDumps(document, { indent: 2 }));
  }

  /** deployed/<id>.notify.json: the signal body. A whole new file each time (upstream left stale tails). */
  async writeNotify(id: string, body: JsonObject): Promise<void> {
    await writeStateFile(this.notifyPath(id), pythonJsonDumps(body, { indent: 2 }));
  }

  /** Several notify files made durable together (one directory sync), each as writeNotify writes it. */
  async writeNotifies(notes: readonly { readonly id: string; readonly body: JsonObject }[]): Promise<void> {
    const files = notes.map((n) => ({ target: this.notifyPath(n.id), data: pythonJsonDumps(n.body, { indent: 2 }) }));
    try {
      await writeFilesAtomic(files, { mode: 0o600 });
    } catch (err) {
      throw stateError('write', this.deployedDir, err);
    }
  }

  /** Delete a deployment's record, upstream files and last re-run's output. */
  async forget(id: string): Promise<void> {
    const files = [this.deployedPath(id), this.notifyPath(id), this.reconvergePath(id), this.recordPath(id)];
    for (const file of files) {
      try {
        await fs.rm(file, { force: true });
      } catch (err) {
        throw stateError('delete', file, err);
      }
    }
    await this.rebootMarks.unmark(id);
  }
}

/** The store of the configured state directory and deployed_dir. */
export function storeFor(
  config: AgentConfig,
  log: Logger,
  now: () => number = Date.now,
  onTransition?: TransitionListener,
): StateStore {
  return new StateStore(
    config.agent.state_dir,
    config.deploy.deployed_dir,
    log,
    now,
    withConsoleLine(config, log, onTransition),
  );
}

/** [agent] console set: every transition is also a console line (console-line.ts), written before `listener` runs. */
function withConsoleLine(
  config: AgentConfig,
  log: Logger,
  listener: TransitionListener | undefined,
): TransitionListener | undefined {
  const file = config.agent.console;
  if (file === undefined || file === '') return listener;
  return async (record, from) => {
    await writeConsoleLine(file, record, from, log);
    await listener?.(record, from);
  };
}

/** The lock file serialising deployment runs (see deploy-lock.ts). */
export function deployLockFile(config: AgentConfig): string {
  return path.join(config.agent.state_dir, 'deploy.lock');
}
