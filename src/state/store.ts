import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { AgentConfig } from '../config/options.js';
import type { Logger } from '../log/logger.js';
import { readFileIfExists, writeFileAtomic } from '../util/atomic-write.js';
import { isJsonObject, type JsonObject } from '../util/json-merge.js';
import { pythonJsonDumps } from '../util/python-json.js';
import { writeConsoleLine } from './console-line.js';
import { isSafeFileName } from '../util/safe-name.js';
import { DeploymentRecordError, DeploymentTransitionError, stateError } from './errors.js';
import { checkDeploymentRecord, type DeploymentRecord } from './record.js';
import { hasResult, isAllowedTransition, type DeploymentState } from './machine.js';

// Durable per-deployment state: <state_dir>/deployments/<id>.json, one record per deployment, rewritten atomically
// (fsync, rename) at every step, so whatever instant the agent dies at, the record says what is left to do. The
// states and the moves between them are declared in deployment-states.ts; every write here is checked against it,
// and every read is checked field by field (deployment-record.ts).
//
//   pending -> running -> done -> signalled        (skipped, applied, removed: see below)
//
// pending: seen, hook not started. running: hook started (hookStarts counts starts; an interrupted hook is run once
// more, then reported failed, so a hook that reboots the machine cannot loop). done: the hook's result and the signal
// (body and target) are stored; the signal is in the outbox until delivered. signalled: Heat has it. skipped: nothing
// to run (a component without a config for the action, an os-apply-config deployment that asks for no signal).
// applied: an os-apply-config deployment (no hook: its data is rendered by the apply step) whose signal waits for the
// end of the cycle that applied it (pending -> applied -> done, with a failure signal when that cycle fails). removed:
// gone from the metadata; pruned after [deploy] prune_after days. awaiting-reboot: the hook exited 194 and asked for a
// reboot (reboot.ts); bootId says in which boot, and after a boot the deployment runs again (running -> done).
// `deploy --rerun` puts a finished deployment back to pending (reruns counts it, rerunHistory keeps what it was);
// `deploy --forget` deletes the record and the upstream files, so the next pass sees the deployment as new.
//
// Next to it, the upstream files in [deploy] deployed_dir: <id>.json (the deployment, written before the hook runs,
// as heat-config does) and <id>.notify.json (the signal, written after the hook), both 0600, indent 2. Upstream tools
// that test for <id>.json see the same deployments as deployed.

export { DEPLOYMENT_STATES, type DeploymentState } from './machine.js';
export {
  RERUN_HISTORY_MAX,
  SIGNAL_HISTORY_MAX,
  type DeploymentRecord,
  type RerunEntry,
  type SignalAttempt,
  type SignalRecord,
  type SignalState,
} from './record.js';

export type TransitionListener = (record: DeploymentRecord, from: DeploymentState | undefined) => void | Promise<void>;

const FILE_MODE = 0o600;
const DIR_MODE = 0o700;

export class StateStore {
  readonly recordsDir: string;

  constructor(
    stateDir: string,
    readonly deployedDir: string,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
    private readonly onTransition?: TransitionListener,
  ) {
    this.recordsDir = path.join(stateDir, 'deployments');
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

  deployedPath(id: string): string {
    return path.join(this.deployedDir, `${id}.json`);
  }

  notifyPath(id: string): string {
    return path.join(this.deployedDir, `${id}.notify.json`);
  }

  /**
   * The record of a deployment, or undefined when there is none. A record that cannot be used (deployment-record.ts)
   * throws a DeploymentRecordError and stays where it is, for the operator (docs/state-machine.md: recovery).
   */
  async read(id: string): Promise<DeploymentRecord | undefined> {
    const file = this.recordPath(id);
    const text = await readStateFile(file);
    if (text === undefined) return undefined;
    const check = checkDeploymentRecord(text, id);
    if (!check.ok) throw new DeploymentRecordError(id, file, check.problem);
    return check.record;
  }

  /**
   * Every record, in no particular order, and the errors of those that cannot be used, each logged here: as an error
   * for the deployment pass that holds them ('hold'), a warning for readers ('ignore'), not at all for the outbox,
   * which runs between polls and would repeat the pass's error every few seconds ('quiet').
   */
  async listAll(
    mode: 'hold' | 'ignore' | 'quiet' = 'hold',
  ): Promise<{ records: DeploymentRecord[]; unusable: DeploymentRecordError[] }> {
    let names: string[];
    try {
      names = await fs.readdir(this.recordsDir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { records: [], unusable: [] };
      throw stateError('list', this.recordsDir, err);
    }
    const records: DeploymentRecord[] = [];
    const unusable: DeploymentRecordError[] = [];
    for (const name of names) {
      if (!name.endsWith('.json') || name.startsWith('.')) continue;
      const id = name.slice(0, -'.json'.length);
      if (!isSafeFileName(id)) continue;
      try {
        const record = await this.read(id);
        if (record) records.push(record);
      } catch (err) {
        if (!(err instanceof DeploymentRecordError)) throw err;
        unusable.push(err);
        const fields = {
          code: err.code,
          deploymentId: id,
          file: err.file,
          problem: err.problem,
          recovery: `os-config-agent deploy --forget ${id}`,
        };
        if (mode === 'ignore') this.log.warn(fields, 'deployment record cannot be used; ignored');
        else if (mode === 'hold') this.log.error(fields, 'deployment record cannot be used; deployment held');
      }
    }
    return { records, unusable };
  }

  /** Every usable record, in no particular order (see listAll; readOnly: 'ignore', else 'hold'). */
  async list(readOnly = false): Promise<DeploymentRecord[]> {
    return (await this.listAll(readOnly ? 'ignore' : 'hold')).records;
  }

  /** Write a record without a state change (signal bookkeeping). */
  async save(record: DeploymentRecord): Promise<DeploymentRecord> {
    const next = { ...record, updatedAt: this.timestamp() };
    const file = this.recordPath(record.id);
    try {
      await writeFileAtomic(file, `${JSON.stringify(next, null, 2)}\n`, { mode: FILE_MODE });
    } catch (err) {
      throw stateError('write', file, err);
    }
    return next;
  }

  /** Record a deployment seen for the first time, in its first state (pending, or signalled when adopted). */
  async create(
    fields: { id: string; name: string; group: string; action: string },
    state: DeploymentState = 'pending',
    patch: Partial<DeploymentRecord> = {},
    logFields: Record<string, unknown> = {},
  ): Promise<DeploymentRecord> {
    const at = this.timestamp();
    if (!isAllowedTransition(undefined, state)) throw new DeploymentTransitionError(fields.id, undefined, state);
    const record: DeploymentRecord = {
      version: 1,
      ...fields,
      state,
      hookStarts: 0,
      firstSeenAt: at,
      updatedAt: at,
      signal: { state: 'none', transport: 'NO_SIGNAL', attempts: 0 },
      ...patch,
    };
    return this.commit(record, undefined, logFields);
  }

  /**
   * Move a record to a new state: written durably first, then logged (one line per transition). A move the state
   * machine does not have is refused before anything is written.
   */
  async transition(
    record: DeploymentRecord,
    to: DeploymentState,
    patch: Partial<DeploymentRecord> = {},
    logFields: Record<string, unknown> = {},
  ): Promise<DeploymentRecord> {
    if (!isAllowedTransition(record.state, to)) throw new DeploymentTransitionError(record.id, record.state, to);
    return this.commit({ ...record, ...patch, state: to }, record.state, logFields, record.failed === true);
  }

  private async commit(
    record: DeploymentRecord,
    from: DeploymentState | undefined,
    logFields: Record<string, unknown>,
    failedBefore = false,
  ): Promise<DeploymentRecord> {
    const next = await this.save(record);
    // The move that records a failure is a warning (journalctl -p warning shows it); the moves after it are not news.
    const level = next.failed === true && !failedBefore ? 'warn' : 'info';
    this.log[level](
      {
        deploymentId: next.id,
        deploymentName: next.name,
        group: next.group,
        action: next.action,
        from: from ?? null,
        to: next.state,
        ...(hasResult(next.state) ? { signalState: next.signal.state, transport: next.signal.transport } : {}),
        ...logFields,
      },
      'deployment state changed',
    );
    await this.onTransition?.(next, from);
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
    const file = this.deployedPath(id);
    try {
      await writeFileAtomic(file, pythonJsonDumps(document, { indent: 2 }), { mode: FILE_MODE });
    } catch (err) {
      throw stateError('write', file, err);
    }
  }

  /** deployed/<id>.notify.json: the signal body. A whole new file each time (upstream left stale tails). */
  async writeNotify(id: string, body: JsonObject): Promise<void> {
    const file = this.notifyPath(id);
    try {
      await writeFileAtomic(file, pythonJsonDumps(body, { indent: 2 }), { mode: FILE_MODE });
    } catch (err) {
      throw stateError('write', file, err);
    }
  }

  /** Delete a deployment's record and upstream files. */
  async forget(id: string): Promise<void> {
    for (const file of [this.deployedPath(id), this.notifyPath(id), this.recordPath(id)]) {
      try {
        await fs.rm(file, { force: true });
      } catch (err) {
        throw stateError('delete', file, err);
      }
    }
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

/** A state file's JSON object when it is version 1 and names `id` (records, queued signals); else undefined. */
export function parseStateObject(text: string, id: string): JsonObject | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  return isJsonObject(value) && value.version === 1 && value.id === id ? value : undefined;
}

/** A state file's text, or undefined when it does not exist; any other failure is a DeploymentStateError. */
export async function readStateFile(file: string): Promise<string | undefined> {
  try {
    return await readFileIfExists(file);
  } catch (err) {
    throw stateError('read', file, err);
  }
}
