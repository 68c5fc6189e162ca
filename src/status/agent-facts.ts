import type { PathMapper } from '../util/rooted-path.js';
import { readFileIfExists } from '../util/atomic-write.js';
import { isJsonObject } from '../util/json-merge.js';

// The daemon's live facts, for `status` (another process): /run/os-config-agent/agent-status.json under --root. The
// runtime directory is tmpfs on real systems, so the daemon writes it without fsync (atomic rename still), after a
// cycle that changed something and every 30 s while idle; after a reboot it is gone, which is right: those facts were
// about a process that no longer runs. The format is defined here, below the daemon that writes it and the command
// that reads it.

const AGENT_STATUS_FILE = '/run/os-config-agent/agent-status.json';

export type CycleResult = 'unchanged' | 'applied' | 'failed';

export interface SourceFacts {
  readonly name: string;
  readonly lastSuccessAt?: string;
  readonly lastErrorAt?: string;
  readonly lastErrorCode?: string;
  /** Scrubbed and cut to a few hundred characters. */
  readonly lastError?: string;
  readonly consecutiveFailures: number;
}

export interface AgentFacts {
  readonly version: 1;
  readonly pid: number;
  /** The process's start time (clock ticks since boot), so a reused pid does not look like the daemon. */
  readonly startTicks?: string;
  readonly startedAt: string;
  readonly mode: string;
  readonly lastCycle?: {
    readonly startedAt: string;
    readonly endedAt: string;
    readonly result: CycleResult;
    readonly exitCode: number;
  };
  /**
   * When the loop means to poll again (it polls earlier when woken by a watched file or a signal). An idle daemon
   * rewrites the file only every 30 s, so this may be past: the polls then go on at pollingIntervalSeconds.
   */
  readonly nextPollAt?: string;
  readonly pollingIntervalSeconds?: number;
  /** When the daemon wrote these facts. */
  readonly writtenAt?: string;
  readonly sources: readonly SourceFacts[];
}

export function agentStatusPath(paths: PathMapper): string {
  return paths.map(AGENT_STATUS_FILE);
}

/** The daemon's last published facts; undefined when there are none or they cannot be read as this version's. */
export async function readAgentFacts(file: string): Promise<AgentFacts | undefined> {
  const text = await readFileIfExists(file).catch(() => undefined);
  if (text === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isJsonObject(value) || value.version !== 1 || typeof value.pid !== 'number' || !Array.isArray(value.sources))
    return undefined;
  return value as unknown as AgentFacts;
}
