import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { Logger } from '../log/logger.js';
import { isSafeFileName } from '../util/safe-name.js';
import { WallDeadlines } from '../util/wall-deadlines.js';
import { stateError } from './errors.js';
import { isPrunable } from './machine.js';
import type { DeploymentRecord, StateStore } from './store.js';

// Keeps the state directories bounded (upstream's deployed/ only ever grew): a deployment removed
// from the metadata more than [deploy] prune_after days ago loses its record and its upstream files. Files in
// deployed/ that no record knows and no current deployment names (left by an earlier agent) go after the same age,
// by modification time. Ages are measured so that a step of the clock neither prunes early nor holds state for a year
// (util/wall-deadlines.ts): a deployment that left the metadata keeps its record for the whole grace period.

const DAY_MS = 86_400_000;

/** The daemon's memory of each grace period, across its passes. */
let PROCESS_DEADLINES = new WallDeadlines();

/**
 * Time this process's grace periods on `monotonic` instead of performance.now() (a test whose fake clock stands for
 * days passing); returns the function that puts the real clock back.
 */
export function usePruneClock(monotonic: () => number): () => void {
  PROCESS_DEADLINES = new WallDeadlines(monotonic);
  return () => {
    PROCESS_DEADLINES = new WallDeadlines();
  };
}

export interface PruneInput {
  readonly store: StateStore;
  readonly records: readonly DeploymentRecord[];
  /** Ids in the current metadata. */
  readonly current: ReadonlySet<string>;
  /** Ids whose record exists but cannot be used: held, so their files stay whatever their age. */
  readonly unusable?: ReadonlySet<string>;
  readonly pruneAfterDays: number;
  readonly now: number;
  readonly log: Logger;
  /** Where the grace periods are tracked (tests give their own monotonic clock); default: this process's. */
  readonly deadlines?: WallDeadlines;
}

/** Returns the ids whose state was deleted. */
export async function pruneState(input: PruneInput): Promise<string[]> {
  const deadlines = input.deadlines ?? PROCESS_DEADLINES;
  const grace = input.pruneAfterDays * DAY_MS;
  const over = (key: string, since: number) => deadlines.passed(key, since, grace, input.now);
  const pruned: string[] = [];
  const dir = input.store.deployedDir;
  for (const record of input.records) {
    if (!isPrunable(record.state) || input.current.has(record.id)) continue;
    const removedAt = record.removedAt ? Date.parse(record.removedAt) : NaN;
    if (!over(`${dir}\0record\0${record.id}`, removedAt)) continue;
    await input.store.forget(record.id);
    input.log.info(
      { deploymentId: record.id, deploymentName: record.name, removedAt: record.removedAt },
      'deployment state pruned',
    );
    pruned.push(record.id);
  }
  const known = new Set([...input.records.map((r) => r.id), ...(input.unusable ?? [])]);
  let names: string[];
  try {
    names = await fs.readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return swept(deadlines, pruned);
    throw stateError('list', dir, err);
  }
  for (const name of names) {
    const id = name.endsWith('.notify.json')
      ? name.slice(0, -'.notify.json'.length)
      : name.endsWith('.json')
        ? name.slice(0, -'.json'.length)
        : undefined;
    if (id === undefined || !isSafeFileName(id) || known.has(id) || input.current.has(id)) continue;
    const file = path.join(dir, name);
    let mtime: number;
    try {
      mtime = (await fs.lstat(file)).mtimeMs;
    } catch {
      continue;
    }
    if (!over(`${file}\0mtime`, mtime)) continue;
    try {
      await fs.rm(file, { force: true });
    } catch (err) {
      throw stateError('delete', file, err);
    }
    input.log.info({ deploymentId: id, file }, 'stale deployed file pruned');
    if (!pruned.includes(id)) pruned.push(id);
  }
  return swept(deadlines, pruned);
}

function swept(deadlines: WallDeadlines, pruned: string[]): string[] {
  deadlines.sweep();
  return pruned;
}
