import { writeFilesAtomic } from '../util/atomic-write.js';
import { stateError } from './errors.js';
import type { CreationEvent, TransitionEvent } from './machine.js';
import type { DeploymentRecord } from './record.js';
import {
  NEW_RECORD_START,
  recordText,
  type CheckedRecordMove,
  type NewRecordFields,
  type RecordPatch,
  type StateStore,
} from './store.js';

// Record moves made durable together: one group of fsyncs the journal commits at once, and the records directory
// synced once, instead of a file and a directory fsync per move. Each move is checked against the state machine when
// it is made, exactly as the store checks it (a move it refuses throws at once and joins nothing); nothing reaches
// the disk until commit(), which writes the last record of each deployment, then logs every move in order and calls
// the transition listener, as the store does after each write.
//
// Only for moves with no effect outside the records between them (no hook started, no file of deployed_dir written,
// no signal sent): a crash before or during the commit leaves each record as it was before the batch or as the batch
// left it, and the next pass decides from either as from any record (docs/state-machine.md).

export class RecordBatch {
  private readonly latest = new Map<string, DeploymentRecord>();
  private readonly moves: CheckedRecordMove[] = [];

  constructor(private readonly store: StateStore) {}

  /** Moves waiting for commit(). */
  get size(): number {
    return this.moves.length;
  }

  /** As StateStore.create, written at commit(). */
  async create(
    fields: NewRecordFields,
    event: CreationEvent = 'seen',
    patch: RecordPatch = {},
    logFields: Record<string, unknown> = {},
  ): Promise<DeploymentRecord> {
    return this.add(
      this.store.checkedMove(NEW_RECORD_START(fields.id), event, this.store.newRecord(fields, patch), logFields),
    );
  }

  /** As StateStore.transition, written at commit(). */
  async transition(
    record: DeploymentRecord,
    event: TransitionEvent,
    patch: RecordPatch = {},
    logFields: Record<string, unknown> = {},
  ): Promise<DeploymentRecord> {
    const next = { ...record, ...patch };
    return this.add(this.store.checkedMove(record, event, next, logFields, record.failed === true));
  }

  /** Writes every record moved since the last commit, then logs and announces the moves; the batch is empty after. */
  async commit(): Promise<void> {
    if (this.moves.length === 0) return;
    const files = [...this.latest.values()].map((r) => ({ target: this.store.recordPath(r.id), data: recordText(r) }));
    const moves = this.moves.splice(0);
    this.latest.clear();
    await this.store.withRebootMarks(moves, async () => {
      try {
        await writeFilesAtomic(files, { mode: 0o600 });
      } catch (err) {
        throw stateError('write', this.store.recordsDir, err);
      }
    });
    for (const move of moves) await this.store.announce(move);
  }

  private add(move: CheckedRecordMove): DeploymentRecord {
    this.moves.push(move);
    this.latest.set(move.written.id, move.written);
    return move.written;
  }
}
