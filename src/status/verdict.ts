import { isInProgress, isListed } from '../state/machine.js';
import { rerunFindings } from './reconverge.js';
import { count } from './text-table.js';
import type { StatusReport } from './report.js';

// What `status` concludes from a report, and the exit code a script acts on (docs/status.md). Every finding is listed,
// worst first; the exit code is that of the worst:
//   2  something only a person can fix: a signal refused for good, a record that cannot be used, a source entry under
//      a reserved name, work left unfinished with no agent running to finish it, an agent that has never run here
//   1  a deployment failed
//   3  still in progress, with an agent running to finish it
//   2  the running agent's last cycle failed (it retries: this counts only when nothing else is going on)
//   4  a re-run of a finished deployment found drift and repaired it (until a re-run of it converges)
//   0  all done and signalled
// A failure is known as soon as it happens: it outranks what is still in progress, so `status --wait` ends with it.

/** Exit codes of `status` (docs/status.md). */
export const EXIT = { done: 0, deploymentFailed: 1, agentOrSignalError: 2, waiting: 3, drifted: 4 } as const;

export interface Verdict {
  readonly exitCode: number;
  /** The verdict in a few words (the RESULT line). */
  readonly summary: string;
  /** Everything that went wrong or is still awaited, worst first; one short line each. */
  readonly reasons: readonly string[];
}

export interface VerdictOptions {
  /**
   * Work in progress with no agent running is still in progress, not an error: `status <id|name> --wait` waits for a
   * deployment the agent has not collected yet, or for an agent that is about to start (docs/status.md).
   */
  readonly awaitAgent?: boolean;
}

export function verdictOf(report: StatusReport, options: VerdictOptions = {}): Verdict {
  const agent = report.agent;
  const unfixable: string[] = [];
  for (const s of report.signals.filter((s) => s.state === 'failed'))
    unfixable.push(`${s.kind} signal ${s.id} failed for good: ${s.lastError ?? 'no answer recorded'}`);
  for (const u of report.unusableRecords ?? [])
    unfixable.push(
      `deployment ${u.id} is held: its record ${u.file} cannot be used (${u.problem}); see docs/state-machine.md`,
    );
  // A source that is up but had entries left out: their deployments never run until renamed.
  for (const s of report.sources)
    if (s.consecutiveFailures > 0 && s.lastErrorCode === 'ERR_RESERVED_NAME')
      unfixable.push(`source ${s.name}: ${s.lastError ?? 'an entry under a reserved name was left out'}`);
  const reruns = rerunFindings(report.deployments);
  const failed = [...failedDeployments(report), ...reruns.failed];
  const waiting = waitingReasons(report);
  const stalled = !agent.running && waiting.length > 0 && !options.awaitAgent;
  if (stalled)
    unfixable.push(
      'no agent is running to finish this: start it (systemctl start os-config-agent), then run status again',
    );
  const neverRan = !agent.running && agent.hasRun === false && !options.awaitAgent;
  if (neverRan)
    unfixable.push(
      'nothing shows that the agent ever ran here (no deployment records, metadata cache or queued signals): check --root and the configuration, or start the agent',
    );
  const cycleFailed =
    agent.running && agent.lastCycle?.result === 'failed'
      ? [`the agent's last cycle failed (exit code ${agent.lastCycle.exitCode}); it retries; see its journal`]
      : [];
  const reasons = [...unfixable, ...failed, ...waiting, ...cycleFailed, ...reruns.drifted];
  if (unfixable.length > 0) {
    const summary = stalled
      ? 'not finished, and no agent is running to finish it'
      : neverRan
        ? 'the agent has not run here'
        : 'an error in the agent, or a signal not delivered';
    return { exitCode: EXIT.agentOrSignalError, summary, reasons };
  }
  if (failed.length > 0)
    return {
      exitCode: EXIT.deploymentFailed,
      summary: failed.length === 1 ? 'a deployment failed' : `${failed.length} deployments failed`,
      reasons,
    };
  if (waiting.length > 0) return { exitCode: EXIT.waiting, summary: 'still in progress', reasons };
  if (cycleFailed.length > 0)
    return { exitCode: EXIT.agentOrSignalError, summary: "the agent's last cycle failed", reasons };
  // A re-run that changed something repaired drift: reported until a re-run of that deployment converges.
  if (reruns.drifted.length > 0)
    return { exitCode: EXIT.drifted, summary: 'a re-run found drift and repaired it', reasons };
  return { exitCode: EXIT.done, summary: 'all done and signalled', reasons };
}

/** The deployments whose last run failed. */
function failedDeployments(report: StatusReport): string[] {
  return report.deployments
    .filter((d) => isListed(d.state) && d.failed === true)
    .map(
      (d) => `deployment ${d.id} (${d.name}) failed${d.statusCode !== undefined ? ` with status ${d.statusCode}` : ''}`,
    );
}

/** What is still awaited: the first cycle, deployments in progress, signals not delivered yet. */
function waitingReasons(report: StatusReport): string[] {
  return [
    // At boot the deployments are not known before the first cycle has collected them.
    ...(report.agent.running && !report.agent.lastCycle ? ['the agent has not finished its first cycle yet'] : []),
    ...report.deployments
      .filter((d) => isInProgress(d.state))
      .map((d) =>
        // A write that failed under a running deployment (a full disk) noted its cause: it is not running now.
        d.state === 'running' && d.lastError !== undefined
          ? `deployment ${d.id} (${d.name}) stopped: ${d.lastError}`
          : `deployment ${d.id} (${d.name}) is ${d.state}`,
      ),
    ...report.signals
      .filter((s) => s.state === 'pending')
      .map((s) => `${s.kind} signal ${s.id} is not delivered yet (${count(s.attempts, 'attempt')})`),
  ];
}
