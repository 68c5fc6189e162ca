import type { ErrorCode } from '../errors.js';
import type { JsonObject } from '../util/json-merge.js';
import type { Deployment } from '../heat/deployment.js';
import type { ProcessOptions, ProcessResult } from '../util/process-group.js';
import type { HookLog } from './kit/hook-log.js';

// What a built-in hook is and what it is given. The same hook code runs inside the agent (no process per deployment)
// and as its own executable (dist/hooks/<group>); the context hides the difference: where the log goes, how the
// tool's process is started and stopped, and which environment holds the hook's variables.

/** A deployment as a hook reads it: the agent's model plus the fields only hooks use. */
export interface HookDeployment extends Deployment {
  readonly config: unknown;
  /** `options`, or {} when it is missing or not an object. */
  readonly options: JsonObject;
  readonly creationTime?: string;
}

/**
 * How a hook starts its tool: the file, arguments, working directory and environment (the whole of it), and
 * optionally a signal by which the hook stops this one run itself (a call to a daemon that does not answer).
 */
export type ToolRun = Pick<ProcessOptions, 'file' | 'args' | 'cwd' | 'env' | 'signal'>;

export interface HookContext {
  /** The hook's environment: HEAT_* variables, PATH, and OS_CONFIG_AGENT_ROOT under --root. */
  readonly env: NodeJS.ProcessEnv;
  readonly log: HookLog;
  /**
   * Aborted when the deployment is stopped (timeout, shutdown), for work that is not a tool: a download. (A hook run
   * as its own executable is stopped by a signal to its process group instead; this one then never aborts.)
   */
  readonly signal: AbortSignal;
  /** Starts a tool and waits for it; stopped with the deployment (timeout, shutdown). */
  spawn(run: ToolRun): Promise<ProcessResult>;
}

/** The heat-agents result: outputs by name, then deploy_stdout, deploy_stderr and deploy_status_code. */
export type HookOutcome = JsonObject;

export interface BuiltinHook {
  /** The deployment group it serves, which is also its file name in a hooks directory. */
  readonly group: string;
  /**
   * True when it runs a deployment object without an id (its id is then ""), as upstream's hook of the group does,
   * which never reads one. A hook that names files or containers after the id leaves it out, and refuses such input.
   */
  readonly acceptsNoId?: boolean;
  run(deployment: HookDeployment, ctx: HookContext): Promise<HookOutcome>;
  /**
   * The files it keeps for one deployment (the script, manifest, playbook, variables file: upstream keeps them, and
   * operators read them to see what ran), removed when the deployment leaves the metadata or its record is pruned.
   */
  workFiles(id: string, env: NodeJS.ProcessEnv): string[];
  /**
   * Optional: undoes what the hook left running for one deployment (containers, compose projects) once the
   * deployment has left the metadata, as upstream's os-refresh-config scripts did. The agent calls it once, before
   * removing the work files, with the agent's hook environment; a throw is logged and does not fail the pass.
   */
  removed?(id: string, ctx: HookContext): Promise<void>;
}

/** A failure the hook reports as its result (status 1, the message as deploy_stderr), not a crash. */
export class HookFailure extends Error {
  readonly code = 'ERR_HOOK_FAILURE' satisfies ErrorCode;
  constructor(message: string) {
    super(message);
    this.name = 'HookFailure';
  }
}
