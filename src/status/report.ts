import type { LoadedConfig } from '../config/load.js';
import type { Logger } from '../log/logger.js';
import { scrubText } from '../log/redact.js';
import { daemonPresenceFile, runningDaemon } from './daemon-presence.js';
import { holdsSignal, isInProgress, isListed } from '../state/machine.js';
import { isSameProcess } from '../util/process-identity.js';
import { signalQueueDir } from '../state/signal-queue-paths.js';
import { listQueuedSignalIds, readQueuedSignal } from '../signals/cfn-signal-queue/files.js';
import { agentStatusPath, readAgentFacts, type AgentFacts, type SourceFacts } from './agent-facts.js';
import { rerunFindings } from './reconverge.js';
import { readStatusAll, type DeploymentStatus, type UnusableRecord } from './status.js';

// The whole of `status`: the agent, its sources, the deployments and the signals not yet delivered, in one versioned
// shape (docs/status.md), and the verdict its exit code comes from. Read only: two `status` at once never conflict.

export const STATUS_VERSION = 1;

export interface AgentSummary {
  readonly running: boolean;
  readonly pid?: number;
  readonly startedAt?: string;
  readonly mode?: string;
  readonly lastCycle?: AgentFacts['lastCycle'];
  readonly nextPollAt?: string;
  readonly pollingIntervalSeconds?: number;
}

export interface UndeliveredSignal {
  /** deployment: a deployment's signal in the outbox. cfn-signal / wc-notify: an entry of the cfn-signal queue. */
  readonly kind: 'deployment' | 'cfn-signal' | 'wc-notify';
  readonly id: string;
  readonly name?: string;
  readonly state: 'pending' | 'failed';
  readonly to: string;
  readonly attempts: number;
  readonly nextAttemptAt?: string;
  readonly lastStatus?: number;
  readonly lastError?: string;
}

export interface StatusReport {
  readonly version: typeof STATUS_VERSION;
  readonly agent: AgentSummary;
  readonly sources: readonly SourceFacts[];
  readonly deployments: readonly DeploymentStatus[];
  readonly signals: readonly UndeliveredSignal[];
  /** Present only when some record cannot be used: those deployments are held (docs/state-machine.md). */
  readonly unusableRecords?: readonly UnusableRecord[];
}

export async function readReport(loaded: LoadedConfig, log: Logger): Promise<StatusReport> {
  const config = loaded.config;
  const [facts, daemonPid, { deployments, unusable }, queued] = await Promise.all([
    readAgentFacts(agentStatusPath(loaded.paths)),
    runningDaemon(daemonPresenceFile(config)),
    readStatusAll(config, log),
    readQueue(signalQueueDir(config)),
  ]);
  // The facts are the running daemon's when their pid is that of the pid file, or their process still runs.
  const factsAlive =
    facts !== undefined &&
    (facts.pid === daemonPid || (facts.startTicks !== undefined && isSameProcess(facts.pid, facts.startTicks)));
  const running = daemonPid !== undefined || factsAlive;
  // Facts of a daemon that is gone still tell its last cycle; the next poll it planned will not come.
  const agent: AgentSummary = {
    running,
    ...(daemonPid !== undefined ? { pid: daemonPid } : factsAlive ? { pid: facts.pid } : {}),
    ...(facts ? { startedAt: facts.startedAt, mode: facts.mode } : {}),
    // A running daemon's last cycle is its own: facts left by an earlier process do not count for it.
    ...(facts?.lastCycle && (factsAlive || !running) ? { lastCycle: facts.lastCycle } : {}),
    // An idle daemon rewrites its facts only now and then: a next poll already past is not shown, the interval is.
    ...(facts?.nextPollAt && factsAlive && Date.parse(facts.nextPollAt) > Date.now()
      ? { nextPollAt: facts.nextPollAt }
      : {}),
    ...(facts?.pollingIntervalSeconds !== undefined && factsAlive
      ? { pollingIntervalSeconds: facts.pollingIntervalSeconds }
      : {}),
  };
  const signals = [...deploymentSignals(deployments), ...queued];
  return {
    version: STATUS_VERSION,
    agent,
    sources: facts?.sources ?? [],
    deployments,
    signals,
    ...(unusable.length > 0 ? { unusableRecords: unusable } : {}),
  };
}

/** The deployments' signals in the outbox that are not delivered: still pending, or failed for good. */
function deploymentSignals(deployments: readonly DeploymentStatus[]): UndeliveredSignal[] {
  const signals: UndeliveredSignal[] = [];
  for (const d of deployments) {
    if (!holdsSignal(d.state) || (d.signal.state !== 'pending' && d.signal.state !== 'failed')) continue;
    signals.push({
      kind: 'deployment',
      id: d.id,
      name: d.name,
      state: d.signal.state,
      to: d.signal.transport,
      attempts: d.signal.attempts,
      ...(d.signal.nextAttemptAt ? { nextAttemptAt: d.signal.nextAttemptAt } : {}),
      ...(d.signal.lastStatus !== undefined ? { lastStatus: d.signal.lastStatus } : {}),
      ...(d.lastError ? { lastError: d.lastError } : {}),
    });
  }
  return signals;
}

/** The cfn-signal queue's pending and failed entries (sent ones are history), without URL secrets or tokens. */
async function readQueue(dir: string): Promise<UndeliveredSignal[]> {
  // status only reads: a queue directory it cannot list shows no queued signals.
  const ids = await listQueuedSignalIds(dir).catch(() => []);
  const out: UndeliveredSignal[] = [];
  for (const id of ids) {
    const entry = await readQueuedSignal(dir, id).catch(() => undefined);
    if (!entry || entry.state === 'sent') continue;
    out.push({
      kind: entry.kind === 'cfn' ? 'cfn-signal' : 'wc-notify',
      id,
      state: entry.state,
      to: scrubText(entry.shownUrl),
      attempts: entry.attempts,
      ...(entry.state === 'pending' && entry.nextAttemptAt ? { nextAttemptAt: entry.nextAttemptAt } : {}),
      ...(entry.lastStatus !== undefined ? { lastStatus: entry.lastStatus } : {}),
      ...(entry.lastError ? { lastError: scrubText(entry.lastError) } : {}),
    });
  }
  return out;
}

/** Exit codes of `status` (docs/status.md). */
export const EXIT = { done: 0, deploymentFailed: 1, agentOrSignalError: 2, waiting: 3, drifted: 4 } as const;

export interface Verdict {
  readonly exitCode: number;
  /** What is still being waited for, or what went wrong; one short line each. */
  readonly reasons: readonly string[];
}

/** The verdict of one deployment (`status <id|name>`): its state, and its own signal (pending: 3, failed: 2). */
export function verdictOfDeployment(deployment: DeploymentStatus): Verdict {
  return verdictOf({
    version: STATUS_VERSION,
    agent: { running: false },
    sources: [],
    deployments: [deployment],
    signals: deploymentSignals([deployment]),
  });
}

/** Whether everything is done, and how it ended: still waiting wins, then agent/signal errors, then failures. */
export function verdictOf(report: StatusReport): Verdict {
  const waiting = [
    // At boot the deployments are not known before the first cycle has collected them.
    ...(report.agent.running && !report.agent.lastCycle ? ['the agent has not finished its first cycle yet'] : []),
    ...report.deployments
      .filter((d) => isInProgress(d.state))
      .map((d) => `deployment ${d.id} (${d.name}) is ${d.state}`),
    ...report.signals
      .filter((s) => s.state === 'pending')
      .map((s) => `${s.kind} signal ${s.id} is not delivered yet (${s.attempts} attempts)`),
  ];
  if (waiting.length > 0) return { exitCode: EXIT.waiting, reasons: waiting };
  const errors = report.signals
    .filter((s) => s.state === 'failed')
    .map((s) => `${s.kind} signal ${s.id} failed for good: ${s.lastError ?? 'no answer recorded'}`);
  for (const u of report.unusableRecords ?? [])
    errors.push(
      `deployment ${u.id} is held: its record ${u.file} cannot be used (${u.problem}); see docs/state-machine.md`,
    );
  if (report.agent.running && report.agent.lastCycle?.result === 'failed')
    errors.push(`the agent's last cycle failed (exit code ${report.agent.lastCycle.exitCode}); see its journal`);
  if (errors.length > 0) return { exitCode: EXIT.agentOrSignalError, reasons: errors };
  const reruns = rerunFindings(report.deployments);
  const failed = report.deployments
    .filter((d) => isListed(d.state) && d.failed === true)
    .map(
      (d) => `deployment ${d.id} (${d.name}) failed${d.statusCode !== undefined ? ` with status ${d.statusCode}` : ''}`,
    );
  failed.push(...reruns.failed);
  if (failed.length > 0) return { exitCode: EXIT.deploymentFailed, reasons: [...failed, ...reruns.drifted] };
  // A re-run that changed something repaired drift: reported until a re-run of that deployment converges.
  if (reruns.drifted.length > 0) return { exitCode: EXIT.drifted, reasons: reruns.drifted };
  return { exitCode: EXIT.done, reasons: [] };
}
