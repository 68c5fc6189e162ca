import type { SourceFacts } from './agent-facts.js';
import { rerunsSection } from './reconverge.js';
import type { StatusReport, UndeliveredSignal, Verdict } from './report.js';
import { formatStatusTable, formatTable, oneLine, shortTime } from './status.js';

// `status` for humans: the agent in two lines, then a table each for the sources, the deployments (as before) and
// the signals not yet delivered, then the verdict the exit code comes from.

export function formatReport(report: StatusReport, verdict: Verdict): string {
  const parts = [
    agentLines(report),
    sourcesTable(report.sources),
    `DEPLOYMENTS\n${formatStatusTable(report.deployments)}`,
  ];
  const reruns = rerunsSection(report.deployments);
  if (reruns !== undefined) parts.push(reruns);
  if (report.signals.length > 0) parts.push(`UNDELIVERED SIGNALS\n${signalsTable(report.signals)}`);
  parts.push(verdictLines(verdict));
  return parts.join('\n');
}

function agentLines(report: StatusReport): string {
  const a = report.agent;
  const head = a.running
    ? `running (pid ${a.pid ?? '?'}${a.mode ? `, ${a.mode} mode` : ''}, since ${shortTime(a.startedAt)})`
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

function sourcesTable(sources: readonly SourceFacts[]): string {
  if (sources.length === 0) return 'SOURCES: none reported (the agent publishes them while it runs)\n';
  const rows = sources.map((s) => [
    s.name,
    shortTime(s.lastSuccessAt),
    String(s.consecutiveFailures),
    s.lastErrorAt ? shortTime(s.lastErrorAt) : '-',
    s.lastErrorCode ?? '-',
    oneLine(s.lastError ?? '-'),
  ]);
  return `SOURCES\n${formatTable(['NAME', 'LAST SUCCESS', 'FAILURES', 'LAST ERROR AT', 'CODE', 'LAST ERROR'], rows)}`;
}

function signalsTable(signals: readonly UndeliveredSignal[]): string {
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
  return formatTable(['KIND', 'ID', 'NAME', 'STATE', 'TO', 'ATTEMPTS', 'NEXT', 'LAST ERROR'], rows);
}

const VERDICT_TEXT: Record<number, string> = {
  0: 'all done and signalled',
  1: 'a deployment failed',
  2: 'an error in the agent, or a signal not delivered',
  3: 'still in progress',
  4: 'a re-run found drift and repaired it',
};

function verdictLines(v: Verdict): string {
  return (
    [
      `RESULT: ${VERDICT_TEXT[v.exitCode] ?? 'unknown'} (exit ${v.exitCode})`,
      ...v.reasons.slice(0, 20).map((r) => `  ${oneLine(r)}`),
    ].join('\n') + '\n'
  );
}
