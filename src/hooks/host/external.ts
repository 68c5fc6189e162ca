import { runProcess, type ProcessResult } from '../../util/process-group.js';

// A hook executable run as heat-config runs it: no arguments (never a shell string), the deployment JSON on stdin, an
// explicit environment, in a process group of its own (src/util/process-group.ts).

export interface RunHookOptions {
  readonly file: string;
  /** Written to the hook's stdin (the deployment as JSON). */
  readonly input: string;
  readonly env?: NodeJS.ProcessEnv;
  /** Milliseconds before the process group is terminated (0: no limit). */
  readonly timeoutMs: number;
  /** Bytes of stdout and of stderr kept (the tail past this). */
  readonly maxBufferBytes?: number;
  /** Milliseconds between SIGTERM and SIGKILL of the process group. */
  readonly killGraceMs?: number;
  /** Milliseconds to wait, after the hook exits, for leftover processes to close its output. */
  readonly exitGraceMs?: number;
  /** Aborted on shutdown: the process group is terminated and the result marked aborted. */
  readonly signal?: AbortSignal;
  /** Called whenever a process of the deployment starts, with its pid (which is also its process-group id). */
  readonly onSpawn?: (pid: number) => void;
  /** Unit properties of the transient systemd scope the process runs in ([deploy] hook_* limits). */
  readonly scopeProperties?: readonly string[];
}

/** What a hook run produced: for an executable, its process's result; a built-in hook run in-process answers alike. */
export type HookResult = ProcessResult;

export type HookRunner = (options: RunHookOptions) => Promise<HookResult>;

export const runHook: HookRunner = (options) =>
  runProcess({ ...options, env: options.env ?? process.env, ownGroup: true });
