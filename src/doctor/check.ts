// What every doctor check returns, and how a list of them becomes the command's output and exit code. The JSON shape
// is versioned (`version`): fields are only ever added; a change of meaning gets a new version (docs/doctor.md).

export type Verdict = 'ok' | 'warn' | 'fail' | 'skipped';

export interface CheckResult {
  /** Stable identifier, e.g. `source.heat`, `hook.puppet`, `disk.state_dir`. */
  readonly id: string;
  readonly verdict: Verdict;
  /** One line: what was found (no secrets). */
  readonly cause: string;
  /** One line: what to do about it (empty when nothing is needed). */
  readonly fix: string;
}

const REPORT_VERSION = 1;

export interface DoctorReport {
  readonly version: typeof REPORT_VERSION;
  /** Worst verdict over all checks ('skipped' counts as ok). */
  readonly result: 'ok' | 'warn' | 'fail';
  readonly checks: readonly CheckResult[];
}

export function ok(id: string, cause: string): CheckResult {
  return { id, verdict: 'ok', cause, fix: '' };
}

export function skipped(id: string, cause: string, fix = ''): CheckResult {
  return { id, verdict: 'skipped', cause, fix };
}

export function warn(id: string, cause: string, fix: string): CheckResult {
  return { id, verdict: 'warn', cause, fix };
}

export function fail(id: string, cause: string, fix: string): CheckResult {
  return { id, verdict: 'fail', cause, fix };
}

export function reportOf(checks: readonly CheckResult[]): DoctorReport {
  const result = checks.some((c) => c.verdict === 'fail')
    ? 'fail'
    : checks.some((c) => c.verdict === 'warn')
      ? 'warn'
      : 'ok';
  return { version: REPORT_VERSION, result, checks };
}

/** 0: every check ok, skipped or a warning; 1: a check failed. (2, a usage error, is commander's.) */
export function exitCodeOf(report: DoctorReport): number {
  return report.result === 'fail' ? 1 : 0;
}

const LABEL: Record<Verdict, string> = { ok: 'ok  ', warn: 'WARN', fail: 'FAIL', skipped: 'skip' };

/** One line per check: verdict, id, cause, and the fix after a dash when there is one. */
export function formatReport(report: DoctorReport): string {
  const width = Math.max(0, ...report.checks.map((c) => c.id.length));
  const lines = report.checks.map(
    (c) => `${LABEL[c.verdict]}  ${c.id.padEnd(width)}  ${oneLine(c.cause)}${c.fix ? ` -- ${oneLine(c.fix)}` : ''}`,
  );
  return `${lines.join('\n')}\n`;
}

/** Causes come from error messages: keep each on one line. */
export function oneLine(text: string): string {
  return text.replace(/\s*[\r\n]+\s*/g, ' ').trim();
}
