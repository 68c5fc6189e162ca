import { groupIntervalSeconds } from '../config/group-intervals.js';
import { RECONVERGE_MIN_SECONDS, reconvergeSeconds } from '../config/reconverge-seconds.js';
import type { AgentConfig } from '../config/options.js';
import { isJsonObject } from '../util/json-merge.js';

// A deployment's options.reconverge_interval: the seconds after which the agent re-runs it once it has finished
// (src/deploy/reconverge/), with the inputs it last had and without signalling Heat: a number of seconds, or its
// plain decimal text, by the rule of config/reconverge-seconds.ts; 0 turns re-runs off for this deployment whatever
// its group's default ([deploy] reconverge_interval). Anything else
// fails the deployment, naming the option, rather than leaving the operator to wonder why nothing is re-run.

export type ReconvergeOption =
  /** Not given: the group's default applies. */
  | { readonly given: false }
  | { readonly given: true; readonly seconds: number }
  | { readonly given: true; readonly problem: string };

export function reconvergeOption(options: unknown): ReconvergeOption {
  if (!isJsonObject(options) || options.reconverge_interval === undefined || options.reconverge_interval === null)
    return { given: false };
  const raw = options.reconverge_interval;
  const seconds = reconvergeSeconds(raw);
  if (typeof seconds === 'string') {
    // The kind of value and its start only: options are not secret, but they can be long.
    const shown =
      typeof raw === 'string' ? JSON.stringify(raw.slice(0, 40)) : `a ${Array.isArray(raw) ? 'list' : typeof raw}`;
    return {
      given: true,
      problem: `options.reconverge_interval is ${typeof raw === 'number' ? String(raw) : shown}, ${seconds} (0 turns re-runs off, else at least ${RECONVERGE_MIN_SECONDS} seconds); correct the deployment's options`,
    };
  }
  return { given: true, seconds };
}

/** A deployment's re-run interval in seconds: its own option, else its group's default; undefined: off. */
export function reconvergeIntervalOf(
  dep: { readonly group: string; readonly reconverge: ReconvergeOption },
  config: AgentConfig,
): number | undefined {
  const own = dep.reconverge;
  if (own.given) return 'seconds' in own && own.seconds > 0 ? own.seconds : undefined;
  return groupIntervalSeconds(config.deploy.reconverge_interval, dep.group);
}
