import type { SourceFacts } from './agent-facts.js';
import type { StatusReport, UndeliveredSignal } from './report.js';
import { rerunsSection } from './reconverge.js';
import type { DeploymentStatus } from './status.js';
import { count, formatTable, oneLine, shortTime } from './text-table.js';
import type { Verdict } from './verdict.js';
import { hasResult } from '../state/machine.js';
import { terminalLines } from '../util/terminal-text.js';

// `status` for a person: the agent in two lines, then a table each for the sources, the deployments and the signals
// not yet delivered, then the verdict the exit code comes from. `width` is the terminal's (undefined: no limit).

export function formatReport(report: StatusReport, verdict: Verdict, width?: number): string {
  const parts = [
    agentLines(report),
    sourcesTable(report.sources, width),
    `DEPLOYMENTS\n${formatDeployments(report.deployments, width)}`,
  ];
  const reruns = rerunsSection(report.deployments);
  if (reruns !== undefined) parts.push(reruns);
  if (report.signals.length > 0) parts.push(`UNDELIVERED SIGNALS\n${signalsTable(report.signals, width)}`);
  parts.push(verdictLines(verdict, width));
  // The reasons name deployments, and the agent lines come from a file: nothing in them may drive the terminal.
  return terminalLines(parts.join('\n'));
}

function agentLines(report: StatusReport): string {
  const a = report.agent;
  const version = a.version && a.version !== report.agentVersion ? `, version ${a.version}` : '';
  const head = a.running
    ? `running (pid ${a.pid ?? '?'}${a.mode ? `, ${a.mode} mode` : ''}, since ${shortTime(a.startedAt)}${version})`
    : 'not running';
  const lines = [`AGENT: ${head}`];
  const c = a.lastCycle;
  if (c)
    lines.push(
      `  last cycle: ${shortTime(c.startedAt)} to ${shortTime(c.endedAt)}, ${c.result} (exit ${c.exitCode})${a.running ? '' : ' [a stopped agent]'}`,
    );
  else if (a.running) lines.push('  last cycle: none finished yet');
  if (a.nextPollAt) lines.push(`  next poll: ${shortTime(a.nextPollAt)}`);
  else if (a.running && a.pollingIntervalSeconds !== undefined)
    lines.push(`  next poll: within ${a.pollingIntervalSeconds} s`);
  return `${lines.join('\n')}\n`;
}

function sourcesTable(sources: readonly SourceFacts[], width: number | undefined): string {
  if (sources.length === 0) return 'SOURCES: none reported (the agent publishes them while it runs)\n';
  const rows = sources.map((s) => [
    s.name,
    shortTime(s.lastSuccessAt),
    String(s.consecutiveFailures),
    s.lastErrorAt ? shortTime(s.lastErrorAt) : '-',
    s.lastErrorCode ?? '-',
    oneLine(s.lastError ?? '-'),
  ]);
  return `SOURCES\n${formatTable(['NAME', 'LAST SUCCESS', 'FAILURES', 'LAST ERROR AT', 'CODE', 'LAST ERROR'], rows, width)}`;
}

const DEPLOYMENT_COLUMNS = [
  'ID',
  'NAME',
  'GROUP',
  'ACTION',
  'STATE',
  'STARTED',
  'ENDED',
  'RESULT',
  'HOOK EXIT',
  'SIGNAL',
  'ERROR',
] as const;

/**
 * One deployment per line. RESULT is the deployment's outcome as Heat is told it (`ok`, or `failed: <its
 * deploy_status_code>`); HOOK EXIT is the hook process's own exit code, which says nothing of the outcome (the script
 * hook exits 0 after reporting a script's failure; 127 is a hook that could not be started).
 */
export function formatDeployments(list: readonly DeploymentStatus[], width?: number): string {
  if (list.length === 0) return 'no deployments known\n';
  const rows = list.map((d) => [
    d.id,
    d.name,
    d.group,
    d.action,
    d.state + (d.adopted ? ' (adopted)' : ''),
    shortTime(d.startedAt),
    shortTime(d.endedAt ?? d.removedAt),
    resultText(d),
    d.exitCode === undefined || d.exitCode === null ? '-' : String(d.exitCode),
    signalText(d),
    oneLine(d.lastError ?? '-'),
  ]);
  return formatTable(DEPLOYMENT_COLUMNS, rows, width);
}

/** The deployment's outcome: `ok`, `failed: <deploy_status_code>`, or '-' before there is one. */
export function resultText(d: DeploymentStatus): string {
  if (d.failed === undefined) return '-';
  if (!d.failed) return 'ok';
  return d.statusCode !== undefined ? `failed: ${d.statusCode}` : 'failed';
}

function signalText(d: DeploymentStatus): string {
  const s = d.signal;
  // A signal is shown once there is a result to signal (and for removed ones, what became of it).
  if (!hasResult(d.state) && d.state !== 'removed') return '-';
  if (s.state === 'none') return s.transport === 'NO_SIGNAL' ? 'none' : '-';
  const base = `${s.state} ${s.transport}`;
  if (s.state === 'pending')
    return `${base} (${count(s.attempts, 'try', 'tries')}${s.nextAttemptAt ? `, next ${shortTime(s.nextAttemptAt)}` : ''})`;
  return base;
}

function signalsTable(signals: readonly UndeliveredSignal[], width: number | undefined): string {
  const rows = signals.map((s) => [
    s.kind,
    s.id,
    s.name ?? '-',
    s.state,
    oneLine(s.to),
    String(s.attempts),
    shortTime(s.nextAttemptAt),
    oneLine(s.lastError ?? '-'),
  ]);
  return formatTable(['KIND', 'ID', 'NAME', 'STATE', 'TO', 'ATTEMPTS', 'NEXT', 'LAST ERROR'], rows, width);
}

/** At most this many reasons are listed in text (--json has them all). */
const MAX_REASONS = 20;

function verdictLines(v: Verdict, width: number | undefined): string {
  const more = v.reasons.length - MAX_REASONS;
  return (
    [
      `RESULT: ${v.summary} (exit ${v.exitCode})`,
      ...v.reasons.slice(0, MAX_REASONS).map((r) => `  ${oneLine(r, width === undefined ? undefined : width - 2)}`),
      ...(more > 0 ? [`  … and ${more} more (status --json lists them all)`] : []),
    ].join('\n') + '\n'
  );
}
