import { isListed, type DeploymentState } from '../state/machine.js';
import type { RerunStatus } from './rerun-status.js';
import { formatTable, oneLine, shortTime } from './text-table.js';

// What `status` says of the re-runs of finished deployments on their reconverge intervals (rerun-status.ts): what
// they make of the verdict (a failed re-run counts as a failed deployment, a re-run that changed something as drift)
// until a re-run converges again, the RE-RUNS section of the text report, and the lines of `status <id>`.

interface Rerun {
  readonly id: string;
  readonly name: string;
  readonly state: DeploymentState;
  readonly reconverge?: RerunStatus;
}

/** The verdict's findings: re-runs that failed, and re-runs that found drift, of deployments Heat still lists. */
export function rerunFindings(deployments: readonly Rerun[]): { failed: string[]; drifted: string[] } {
  const failed: string[] = [];
  const drifted: string[] = [];
  for (const d of deployments) {
    const last = d.reconverge?.last;
    if (last === undefined || !isListed(d.state)) continue;
    const at = shortTime(last.endedAt);
    if (last.outcome === 'failed')
      failed.push(`deployment ${d.id} (${d.name}): its re-run at ${at} failed: ${last.reason ?? 'no reason recorded'}`);
    else if (last.outcome === 'changed')
      drifted.push(
        `deployment ${d.id} (${d.name}) had drifted: its re-run at ${at} changed ${last.changes !== undefined ? `${last.changes} resources` : 'something'}; a re-run that changes nothing clears this`,
      );
  }
  return { failed, drifted };
}

const COLUMNS = ['ID', 'NAME', 'RUNS', 'LAST RE-RUN', 'OUTCOME', 'EXIT', 'CHANGES', 'REASON'] as const;

/** The RE-RUNS section: one line per deployment that has been re-run; undefined when none has. */
export function rerunsSection(deployments: readonly Rerun[]): string | undefined {
  const rows = deployments.flatMap((d) => {
    const rc = d.reconverge;
    if (rc === undefined) return [];
    const last = rc.last;
    return [
      [
        d.id,
        d.name,
        String(rc.runs),
        rc.running ? 'running now' : shortTime(last?.endedAt),
        last?.outcome ?? '-',
        last?.exitCode === undefined || last.exitCode === null ? (last?.statusCode ?? '-') : String(last.exitCode),
        last?.changes !== undefined ? String(last.changes) : '-',
        oneLine(last?.reason ?? '-'),
      ],
    ];
  });
  return rows.length === 0 ? undefined : `RE-RUNS\n${formatTable(COLUMNS, rows)}`;
}

/** When the deployment is re-run, as `status <id>` shows it. */
export interface RerunSchedule {
  /** Its interval (its own option, else its group's); absent: not re-run. */
  readonly intervalSeconds?: number;
  /** When the next re-run is due, while it can be re-run. */
  readonly nextAt?: string;
}

/** The lines of `status <id>` about the deployment's re-runs (none when it is not re-run and never was). */
export function rerunDetailLines(rc: RerunStatus | undefined, schedule: RerunSchedule): string[] {
  const every = schedule.intervalSeconds !== undefined ? `every ${schedule.intervalSeconds} s` : 'off';
  const next = schedule.nextAt !== undefined ? `, next ${schedule.nextAt}` : '';
  if (rc === undefined) return schedule.intervalSeconds !== undefined ? [`  re-runs: none yet (${every}${next})`] : [];
  const lines = [`  re-runs: ${rc.runs} (${every}${next})${rc.running ? ', one running now' : ''}`];
  const last = rc.last;
  if (last) {
    const exit = last.exitCode === undefined || last.exitCode === null ? '-' : String(last.exitCode);
    const changes = last.changes !== undefined ? `, ${last.changes} changes` : '';
    lines.push(
      `  last re-run: ${last.startedAt} to ${last.endedAt}: ${last.outcome} (exit code ${exit}, deploy_status_code ${last.statusCode ?? '-'}${changes})`,
    );
    if (last.reason !== undefined) lines.push(`  last re-run's reason: ${last.reason}`);
  }
  return lines;
}
