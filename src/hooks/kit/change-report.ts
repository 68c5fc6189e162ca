import type { HookLog } from './hook-log.js';
import { readOutputFile } from './work-files.js';

// Whether a run changed the system. heat-agents' protocol has no word for it, so the agent asks only when it re-runs a
// finished deployment on its reconverge interval, with OS_CONFIG_AGENT_RECONVERGE=1 in the hook's environment, and a
// hook answers with one more key in its JSON result, deploy_changed: true or false, or the number of resources it
// changed. Heat ignores keys it does not know; without the variable a hook's result is upstream's, key for key.
// The configuration tools say it themselves: puppet in its exit code, ansible in its recap, chef-client in its last
// line; a script says it in a file, as it gives its outputs.

export const RECONVERGE_ENV = 'OS_CONFIG_AGENT_RECONVERGE';

/** The key of a hook's result that says whether the run changed anything. */
export const CHANGED_KEY = 'deploy_changed';

/** true/false, or how many resources changed; undefined when the tool did not say. */
export type Changes = boolean | number | undefined;

/** Whether the agent asks this run to say what it changed (a re-run). */
export function asksForChanges(env: NodeJS.ProcessEnv): boolean {
  return env[RECONVERGE_ENV] === '1';
}

/** `puppet apply --detailed-exitcodes`: 0 nothing changed, 2 changes applied, 6 changes and failures. */
export function puppetChanges(status: number): Changes {
  if (status === 0) return false;
  return status === 2 || status === 6 ? true : undefined;
}

/**
 * ansible-playbook: the changed tasks of every host, from the json callback's `stats` when stdout is its document,
 * else from the `changed=N` counts of the PLAY RECAP lines (the default callback and its relatives).
 */
export function ansibleChanges(stdout: string): Changes {
  const fromJson = jsonStatsChanges(stdout);
  if (fromJson !== undefined) return fromJson;
  const recap = stdout.lastIndexOf('PLAY RECAP');
  if (recap === -1) return undefined;
  const counts = [...stdout.slice(recap).matchAll(/\bchanged=(\d+)/g)].map((m) => Number(m[1]));
  return counts.length === 0 ? undefined : counts.reduce((a, b) => a + b, 0);
}

function jsonStatsChanges(stdout: string): number | undefined {
  const start = stdout.indexOf('{');
  if (start === -1) return undefined;
  let doc: unknown;
  try {
    doc = JSON.parse(stdout.slice(start));
  } catch {
    return undefined;
  }
  const stats = (doc as { stats?: unknown } | null)?.stats;
  if (typeof stats !== 'object' || stats === null) return undefined;
  let total = 0;
  for (const host of Object.values(stats)) {
    const changed = (host as { changed?: unknown } | null)?.changed;
    if (typeof changed === 'number' && Number.isFinite(changed)) total += changed;
  }
  return total;
}

/** chef-client (and Cinc): "Chef Infra Client finished, 2/15 resources updated in 03 seconds"; the last such line. */
export function chefChanges(stdout: string): Changes {
  const lines = [...stdout.matchAll(/\b(?:Chef|Cinc)(?: Infra)? Client finished, (\d+)\/\d+ resources? updated/g)];
  const last = lines.at(-1);
  return last === undefined ? undefined : Number(last[1]);
}

/**
 * A script's answer: it writes `true`, `false` or a count to `$heat_outputs_path.deploy_changed`, as it writes its
 * outputs. A missing file says nothing; anything else is logged and says nothing.
 */
export async function scriptChanges(outputsPath: string, log: HookLog): Promise<Changes> {
  let text: string;
  try {
    // As the outputs are read: a FIFO or a device left under the name is not read (work-files.ts).
    text = readOutputFile(`${outputsPath}.${CHANGED_KEY}`).trim();
  } catch {
    return undefined;
  }
  const changes = parseChanges(text);
  if (changes === undefined)
    log.warn('deploy_changed not understood: write true, false or a count', { value: text.slice(0, 40) });
  return changes;
}

/** A hook's `deploy_changed` as the agent reads it: a boolean, a count, or their text; undefined for anything else. */
export function parseChanges(value: unknown): Changes {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'number') return Number.isInteger(value) && value >= 0 ? value : undefined;
  if (typeof value !== 'string') return undefined;
  const text = value.trim().toLowerCase();
  if (text === 'true') return true;
  if (text === 'false') return false;
  return /^\d+$/.test(text) ? Number(text) : undefined;
}
