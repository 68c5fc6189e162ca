import { readdir } from 'node:fs/promises';
import type { LoadedConfig } from '../config/load.js';
import { VERSION } from '../version.js';
import type { Logger } from '../log/logger.js';
import { scrubText, scrubValue } from '../log/redact.js';
import { storeFor } from '../state/store.js';
import { registerDeploymentSecrets } from './deployment-secrets.js';
import { daemonPresenceFile, runningDaemon } from './daemon-presence.js';
import { holdsSignal } from '../state/machine.js';
import { isSameProcess } from '../util/process-identity.js';
import { signalQueueDir } from '../state/signal-queue-paths.js';
import {
  readReservedNameFindings,
  reservedNameFindingsFile,
  type ReservedNameFinding,
} from '../state/reserved-name-findings.js';
import { listQueuedSignalIds, readQueuedSignal } from '../signals/cfn-signal-queue/files.js';
import { agentStatusPath, readAgentFacts, type AgentFacts, type SourceFacts } from './agent-facts.js';
import { readStatusAll, type DeploymentStatus, type UnusableRecord } from './status.js';
import { verdictOf, type Verdict, type VerdictOptions } from './verdict.js';

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
  /** The running daemon's version, when it published one (it differs from `agentVersion` after an upgrade). */
  readonly version?: string;
  /**
   * Whether the agent has left any trace here: a running daemon, its facts, deployment records, queued signals or a
   * metadata cache. Absent in the report of one deployment (which exists, so the agent ran).
   */
  readonly hasRun?: boolean;
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
  /** The version of the agent that wrote this report. */
  readonly agentVersion: string;
  readonly agent: AgentSummary;
  readonly sources: readonly SourceFacts[];
  readonly deployments: readonly DeploymentStatus[];
  readonly signals: readonly UndeliveredSignal[];
  /** Present only when some record cannot be used: those deployments are held (docs/state-machine.md). */
  readonly unusableRecords?: readonly UnusableRecord[];
}

export async function readReport(loaded: LoadedConfig, log: Logger): Promise<StatusReport> {
  const config = loaded.config;
  const [{ agent, sources }, { deployments, unusable }, queue, cached] = await Promise.all([
    readAgent(loaded),
    readStatusAll(config, log),
    readQueue(signalQueueDir(config)),
    hasCacheFiles(config.DEFAULT.cachedir),
  ]);
  const traces = deployments.length > 0 || unusable.length > 0 || queue.entries > 0 || cached;
  // Every text of the report (names, errors, sources' problems, signal targets) scrubbed with the secrets of the
  // configuration and with those of every deployment whose report carries text a run produced (an error, a re-run's
  // reason): the rest of a row is Heat's identifiers and the agent's own words, and reading two files for each of
  // 10,000 settled deployments was most of what `status` cost.
  await registerDeploymentSecrets(
    storeFor(config, log),
    deployments.filter(carriesRunText).map((d) => d.id),
  );
  return scrubValue({
    version: STATUS_VERSION,
    agentVersion: VERSION,
    agent: { ...agent, hasRun: agent.hasRun === true || traces },
    sources,
    deployments,
    signals: [...deploymentSignals(deployments), ...queue.undelivered],
    ...(unusable.length > 0 ? { unusableRecords: unusable } : {}),
  });
}

function carriesRunText(d: DeploymentStatus): boolean {
  return d.lastError !== undefined || d.reconverge?.last?.reason !== undefined;
}

/** The daemon: whether it runs (its pid file, or its published facts' process), and what it last published. */
export async function readAgent(
  loaded: LoadedConfig,
): Promise<{ agent: AgentSummary; sources: readonly SourceFacts[] }> {
  const [facts, daemonPid] = await Promise.all([
    readAgentFacts(agentStatusPath(loaded.paths)),
    runningDaemon(daemonPresenceFile(loaded.config)),
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
    ...(facts?.agentVersion && factsAlive ? { version: facts.agentVersion } : {}),
    // A running daemon's last cycle is its own: facts left by an earlier process do not count for it.
    ...(facts?.lastCycle && (factsAlive || !running) ? { lastCycle: facts.lastCycle } : {}),
    // An idle daemon rewrites its facts only now and then: a next poll already past is not shown, the interval is.
    ...(facts?.nextPollAt && factsAlive && Date.parse(facts.nextPollAt) > Date.now()
      ? { nextPollAt: facts.nextPollAt }
      : {}),
    ...(facts?.pollingIntervalSeconds !== undefined && factsAlive
      ? { pollingIntervalSeconds: facts.pollingIntervalSeconds }
      : {}),
    hasRun: running || facts !== undefined,
  };
  const kept = await readReservedNameFindings(reservedNameFindingsFile(loaded.config));
  return { agent, sources: withReservedNameFindings(facts?.sources ?? [], kept) };
}

/**
 * The daemon's sources, with each reserved-name clash kept on disk that they do not show (no daemon has run since
 * the last boot, or the last collection was a one-off command): such a source's entry never runs until renamed.
 */
function withReservedNameFindings(
  sources: readonly SourceFacts[],
  findings: readonly ReservedNameFinding[],
): SourceFacts[] {
  const out = [...sources];
  for (const f of findings) {
    const i = out.findIndex((s) => s.name === f.source);
    const shown = out[i];
    if (shown && shown.consecutiveFailures > 0 && shown.lastErrorCode === 'ERR_RESERVED_NAME') continue;
    const fact: SourceFacts = {
      ...shown,
      name: f.source,
      lastErrorAt: f.since,
      lastErrorCode: 'ERR_RESERVED_NAME',
      lastError: f.error,
      consecutiveFailures: Math.max(1, shown?.consecutiveFailures ?? 0),
    };
    if (i >= 0) out[i] = fact;
    else out.push(fact);
  }
  return out;
}

/** Whether the metadata cache holds anything: a collection was committed here. */
async function hasCacheFiles(dir: string): Promise<boolean> {
  const names = await readdir(dir).catch(() => []);
  return names.some((n) => n.endsWith('.json'));
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

/**
 * The cfn-signal queue's pending and failed entries (sent ones are history), without URL secrets or tokens, and how
 * many entries it holds in all.
 */
async function readQueue(dir: string): Promise<{ undelivered: UndeliveredSignal[]; entries: number }> {
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
  return { undelivered: out, entries: ids.length };
}

/** The verdict of one deployment (`status <id|name>`): its state, and its own signal (pending: 3, failed: 2). */
export function verdictOfDeployment(
  deployment: DeploymentStatus,
  agent: AgentSummary,
  options: VerdictOptions = {},
): Verdict {
  return verdictOf(
    {
      version: STATUS_VERSION,
      agentVersion: VERSION,
      // It is known, so the agent has run.
      agent: { ...agent, hasRun: true },
      sources: [],
      deployments: [deployment],
      signals: deploymentSignals([deployment]),
    },
    options,
  );
}
