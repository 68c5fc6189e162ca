import type { HookOutcome } from './contract.js';
import { CHANGED_KEY, type Changes } from './kit/change-report.js';

/** The keys of a result that are not outputs. */
export const STATUS_KEYS: readonly string[] = ['deploy_stdout', 'deploy_stderr', 'deploy_status_code'];

export interface ResultParts {
  readonly outputs?: Readonly<Record<string, unknown>>;
  readonly stdout?: string;
  readonly stderr?: string;
  readonly status: number;
  /** What the run changed, when the agent asked (a re-run) and the tool said (kit/change-report.ts). */
  readonly changed?: Changes;
}

/**
 * A result object: the outputs, then the three status keys (which win over outputs of the same name), then
 * deploy_changed when there is an answer to give.
 */
export function result({ outputs = {}, stdout = '', stderr = '', status, changed }: ResultParts): HookOutcome {
  const out: HookOutcome = {};
  for (const [key, value] of Object.entries(outputs)) {
    if (!STATUS_KEYS.includes(key))
      Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
  }
  out.deploy_stdout = stdout;
  out.deploy_stderr = stderr;
  out.deploy_status_code = status;
  if (changed !== undefined) out[CHANGED_KEY] = changed;
  return out;
}

/** A failure result with a message for the operator. */
export function failure(message: string): HookOutcome {
  return result({ stderr: message, status: 1 });
}
