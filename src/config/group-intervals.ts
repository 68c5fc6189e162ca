import type { ConfigProblem } from './load.js';
import { RECONVERGE_MIN_SECONDS, reconvergeSeconds } from './reconverge-seconds.js';

// [deploy] reconverge_interval: the agent's default re-run interval per deployment group, as oslo.config writes a
// dict option: `group:seconds` entries, comma-separated or on repeated lines (`puppet:1800, ansible:3600`). A later
// entry for a group replaces an earlier one, so a conf.d file can change or switch off (`:0`) what another set.

/** The entries of the option, checked: each bad one is a configuration problem and left out. */
export function normaliseGroupIntervals(values: readonly string[], problems: ConfigProblem[]): string[] {
  const out: string[] = [];
  for (const value of values) {
    for (const entry of value.split(/[\s,]+/)) {
      if (entry === '') continue;
      const parsed = parseEntry(entry);
      if (typeof parsed === 'string') {
        problems.push({
          severity: 'error',
          section: 'deploy',
          option: 'reconverge_interval',
          message: `${JSON.stringify(entry)} ${parsed} (0 turns the group off, else at least ${RECONVERGE_MIN_SECONDS} seconds); ignored (that group is not re-run by default)`,
        });
        continue;
      }
      out.push(`${parsed.group}:${parsed.seconds}`);
    }
  }
  return out;
}

/** The default interval of `group` in seconds (the last entry naming it); undefined when none, or 0 (off). */
export function groupIntervalSeconds(values: readonly string[], group: string): number | undefined {
  let seconds: number | undefined;
  for (const entry of values) {
    const parsed = parseEntry(entry);
    if (typeof parsed !== 'string' && parsed.group === group) seconds = parsed.seconds;
  }
  return seconds === undefined || seconds === 0 ? undefined : seconds;
}

/** One `group:seconds` entry, or what is wrong with it. */
function parseEntry(entry: string): { group: string; seconds: number } | string {
  const colon = entry.lastIndexOf(':');
  if (colon <= 0) return 'is not group:seconds';
  const seconds = reconvergeSeconds(entry.slice(colon + 1));
  return typeof seconds === 'string' ? `has an interval that is ${seconds}` : { group: entry.slice(0, colon), seconds };
}
