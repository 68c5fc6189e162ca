import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { AgentConfig } from '../config/options.js';
import type { Logger } from '../log/logger.js';
import { readFileIfExists, writeFileAtomic } from '../util/atomic-write.js';
import { isJsonObject, type JsonObject } from '../util/json-merge.js';
import { pythonJsonDumps } from '../util/python-json.js';
import { writeConsoleLine } from './console-line.js';
import { isSafeFileName } from '../util/safe-name.js';
import { stateError } from './deploy-errors.js';
import type { SignalTarget, Transport } from './signal-target.js';

// Durable per-deployment state: <state_dir>/deployments/<id>.json, one record per deployment, rewritten atomically
// (fsync, rename) at every step, so whatever instant the agent dies at, the record says what is left to do:
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

export const DEPLOYMENT_STATES = ['pending', 'running', 'awaiting-reboot', 'applied', 'done', 'signalled', 'skipped', 'removed'] as const;
export type DeploymentState = (typeof DEPLOYMENT_STATES)[number];
export type SignalState = 'none' | 'pending' | 'sent' | 'failed' | 'cancelled';

export interface SignalRecord {
  readonly state: SignalState;
  readonly transport: Transport;
  readonly attempts: number;
  /** While pending: where to send, and what (the trimmed JSON text). Dropped once settled. */
  readonly target?: SignalTarget;
  readonly text?: string;
  readonly nextAttemptAt?: string;
  readonly lastAttemptAt?: string;
  readonly sentAt?: string;
  readonly lastStatus?: number;
  readonly lastError?: string;
  /** The last few delivery attempts, oldest first (at most SIGNAL_HISTORY_MAX; records before issue 20 have none). */
  readonly history?: readonly SignalAttempt[];
}

/** What a deployment had come to when it was put back to pending by `deploy --rerun`. */
export interface RerunEntry {
  readonly at: string;
  readonly fromState: DeploymentState;
  readonly exitCode?: number | null;
  readonly statusCode?: string;
  readonly signal: SignalState;
}

/** Entries of rerunHistory kept (the oldest go first); `reruns` keeps the full count. */
export const RERUN_HISTORY_MAX = 10;
export interface SignalAttempt {
  readonly at: string;
  /** sent; retry: will be tried again; failed: settled as failed. */
  readonly outcome: 'sent' | 'retry' | 'failed';
  readonly status?: number;
  readonly error?: string;
}

export const SIGNAL_HISTORY_MAX = 8;

export interface DeploymentRecord {
  readonly version: 1;
  readonly id: string;
  readonly name: string;
  readonly group: string;
  readonly action: string;
  readonly state: DeploymentState;
  /** For removed records: the state before removal. */
  readonly stateBeforeRemoval?: DeploymentState;
  /** Hook path as the instance sees it. */
  readonly hook?: string;
  readonly hookStarts: number;
  /** While running: the hook's pid (its process-group id) and start time, to end an orphan after a crash. */
  readonly hookPid?: number;
  readonly hookPidStart?: string;
  readonly firstSeenAt: string;
  readonly updatedAt: string;
  readonly startedAt?: string;
  readonly endedAt?: string;
  readonly exitCode?: number | null;
  /** deploy_status_code of the signal, as text. */
  readonly statusCode?: string;
  /** As Heat will judge the signal. */
  readonly failed?: boolean;
  readonly lastError?: string;
  readonly removedAt?: string;
  /** Found already deployed by an earlier agent (deployed/<id>.json existed): never run here. */
  readonly adopted?: boolean;
  /** Times `deploy --rerun` put it back to pending, and the newest of those runs' outcomes. */
  readonly reruns?: number;
  readonly rerunHistory?: readonly RerunEntry[];
  /** Reboots this deployment asked for (exit 194) and the agent started. */
  readonly reboots?: number;
  /** While awaiting-reboot: the boot id when the reboot was asked, and when the reboot command returned. */
  readonly bootId?: string;
  readonly rebootRequestedAt?: string;
  readonly rebootCommandRanAt?: string;
  readonly signal: SignalRecord;
}

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

  /** The record of a deployment; a corrupt one is logged, set aside (unless readOnly) and reads as absent. */
  async read(id: string, readOnly = false): Promise<DeploymentRecord | undefined> {
    const file = this.recordPath(id);
    const text = await readStateFile(file);
    if (text === undefined) return undefined;
    const record = parseRecord(text, id);
    if (record) return record;
    if (readOnly) {
      this.log.warn({ code: 'ERR_DEPLOYMENT_STATE', deploymentId: id, file }, 'deployment record is corrupt; ignored');
      return undefined;
    }
    const aside = `${file}.corrupt-${this.now()}`;
    this.log.error({ code: 'ERR_DEPLOYMENT_STATE', deploymentId: id, file, movedTo: aside }, 'deployment record is corrupt; set aside');
    await fs.rename(file, aside).catch((err: unknown) => {
      throw stateError('set aside the corrupt record', file, err);
    });
    return undefined;
  }

  /** Every record, in no particular order. */
  async list(readOnly = false): Promise<DeploymentRecord[]> {
    let names: string[];
    try {
      names = await fs.readdir(this.recordsDir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw stateError('list', this.recordsDir, err);
    }
    const out: DeploymentRecord[] = [];
    for (const name of names) {
      if (!name.endsWith('.json') || name.startsWith('.')) continue;
      const id = name.slice(0, -'.json'.length);
      if (!isSafeFileName(id)) continue;
      const record = await this.read(id, readOnly);
      if (record) out.push(record);
    }
    return out;
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

  /** Record a deployment seen for the first time, in its first state. */
  async create(
    fields: { id: string; name: string; group: string; action: string },
    state: DeploymentState = 'pending',
    patch: Partial<DeploymentRecord> = {},
    logFields: Record<string, unknown> = {},
  ): Promise<DeploymentRecord> {
    const at = this.timestamp();
    const record: DeploymentRecord = { version: 1, ...fields, state, hookStarts: 0, firstSeenAt: at, updatedAt: at, signal: { state: 'none', transport: 'NO_SIGNAL', attempts: 0 }, ...patch };
    return this.commit(record, undefined, logFields);
  }

  /** Move a record to a new state: written durably first, then logged (one line per transition). */
  async transition(record: DeploymentRecord, to: DeploymentState, patch: Partial<DeploymentRecord> = {}, logFields: Record<string, unknown> = {}): Promise<DeploymentRecord> {
    return this.commit({ ...record, ...patch, state: to }, record.state, logFields);
  }

  private async commit(record: DeploymentRecord, from: DeploymentState | undefined, logFields: Record<string, unknown>): Promise<DeploymentRecord> {
    const next = await this.save(record);
    this.log.info(
      {
        deploymentId: next.id,
        deploymentName: next.name,
        group: next.group,
        action: next.action,
        from: from ?? null,
        to: next.state,
        ...(next.state === 'done' || next.state === 'signalled' ? { signal: next.signal.state, transport: next.signal.transport } : {}),
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
export function storeFor(config: AgentConfig, log: Logger, now: () => number = Date.now, onTransition?: TransitionListener): StateStore {
  return new StateStore(config.agent.state_dir, config.deploy.deployed_dir, log, now, withConsoleLine(config, log, onTransition));
}

/** [agent] console set: every transition is also a console line (console-line.ts), written before `listener` runs. */
function withConsoleLine(config: AgentConfig, log: Logger, listener: TransitionListener | undefined): TransitionListener | undefined {
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

function parseRecord(text: string, id: string): DeploymentRecord | undefined {
  const value = parseStateObject(text, id);
  if (!value) return undefined;
  if (!(DEPLOYMENT_STATES as readonly unknown[]).includes(value.state) || !isJsonObject(value.signal)) return undefined;
  if (typeof value.hookStarts !== 'number' || typeof value.name !== 'string' || typeof value.group !== 'string') return undefined;
  return value as unknown as DeploymentRecord;
}

/** A state file's text, or undefined when it does not exist; any other failure is a DeploymentStateError. */
export async function readStateFile(file: string): Promise<string | undefined> {
  try {
    return await readFileIfExists(file);
  } catch (err) {
    throw stateError('read', file, err);
  }
}
