import type { AgentConfig } from '../../config/options.js';
import { parseDeployment, type Deployment } from '../../heat/deployment.js';
import { reconvergeIntervalOf } from '../../heat/reconverge-option.js';
import { canReconverge, reconvergeDueAt } from '../../state/reconverge-record.js';
import { readStateFile } from '../../state/state-file.js';
import type { DeploymentRecord, StateStore } from '../../state/store.js';
import type { Logger } from '../../log/logger.js';
import { APPLY_GROUPS } from '../apply-group.js';

// Which finished deployments are re-run, and when. The deployment is read back from deployed/<id>.json, the document
// its hook was given (so a re-run has the inputs it last had, and needs no poll of Heat); its interval is its own
// options.reconverge_interval, else its group's [deploy] reconverge_interval. Only the records are looked at
// otherwise, so a daemon with nothing to re-run reads nothing more than the list of records.

export interface Candidate {
  readonly record: DeploymentRecord;
  /** The deployment as its hook last got it. */
  readonly deployment: Deployment;
  readonly intervalSeconds: number;
  /** Epoch ms. */
  readonly dueAt: number;
}

export interface Candidates {
  readonly candidates: readonly Candidate[];
  /** Records a dead agent left reconverging (interrupted.ts ends them). */
  readonly leftovers: readonly DeploymentRecord[];
}

export async function findCandidates(
  store: StateStore,
  config: AgentConfig,
  log: Logger,
  now: number,
): Promise<Candidates> {
  // Quiet: the deployment pass reports (and holds) the records that cannot be used.
  const { records } = await store.listAll('quiet');
  const candidates: Candidate[] = [];
  const leftovers: DeploymentRecord[] = [];
  for (const record of records) {
    if (record.state === 'reconverging') leftovers.push(record);
    if (!canReconverge(record)) continue;
    const deployment = await deployedDeployment(store, record, log);
    if (deployment === undefined) continue;
    // An os-apply-config deployment without a hook was applied by its cycle, and every cycle applies it again.
    if (APPLY_GROUPS.has(deployment.group) && record.hook === undefined) continue;
    const intervalSeconds = reconvergeIntervalOf(deployment, config);
    if (intervalSeconds === undefined) continue;
    candidates.push({ record, deployment, intervalSeconds, dueAt: reconvergeDueAt(record, intervalSeconds, now) });
  }
  candidates.sort((a, b) => a.dueAt - b.dueAt || a.record.id.localeCompare(b.record.id));
  return { candidates, leftovers };
}

/** deployed/<id>.json parsed as Heat's deployment; undefined (logged at debug) when it is missing or unusable. */
async function deployedDeployment(
  store: StateStore,
  record: DeploymentRecord,
  log: Logger,
): Promise<Deployment | undefined> {
  const file = store.deployedPath(record.id);
  let value: unknown;
  try {
    const text = await readStateFile(file);
    if (text === undefined) return undefined;
    value = JSON.parse(text);
  } catch {
    log.debug({ deploymentId: record.id, file }, 'deployed file unreadable; not re-run');
    return undefined;
  }
  const parsed = parseDeployment(value);
  return parsed.ok && parsed.deployment.id === record.id ? parsed.deployment : undefined;
}
