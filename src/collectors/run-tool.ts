import { runProcess } from '../util/process-group.js';

// How a collector runs a system tool (blkid, mount, bsdtar, mcopy), through the agent's one process starter: argument
// vector, never a shell; no stdin; a time limit after which the tool is killed; stdout capped (a tool printing without
// end is an error, not a memory problem). Every failure comes back as a value with a short reason an operator can act
// on; nothing here throws.

export interface ToolRun {
  readonly file: string;
  readonly args: readonly string[];
  readonly timeoutMs: number;
  /** Largest stdout accepted, in bytes. */
  readonly maxBytes: number;
  readonly env?: Readonly<Record<string, string>>;
  readonly signal?: AbortSignal;
}

export type ToolResult =
  | { readonly ok: true; readonly stdout: Buffer }
  /** `exitCode` is set when the tool ran and exited non-zero; `missing` when it is not installed. */
  | {
      readonly ok: false;
      readonly reason: string;
      readonly exitCode?: number;
      readonly missing?: boolean;
      readonly stderr: string;
    };

const STDERR_SHOWN = 300;
/** After the time limit, SIGTERM; this long after, SIGKILL. */
const KILL_GRACE_MS = 2000;

export async function runTool(run: ToolRun): Promise<ToolResult> {
  const result = await runProcess({
    file: run.file,
    args: run.args,
    env: run.env ? { ...process.env, ...run.env } : process.env,
    timeoutMs: run.timeoutMs,
    // One byte more than accepted, so that "more than maxBytes" shows as a cut tail.
    maxBufferBytes: run.maxBytes + 1,
    killGraceMs: KILL_GRACE_MS,
    ...(run.signal ? { signal: run.signal } : {}),
  });
  const stderr = result.stderr.trim().slice(0, STDERR_SHOWN);
  if (result.spawnError?.code === 'ENOENT')
    return { ok: false, reason: `${run.file} is not installed`, missing: true, stderr };
  if (result.spawnError) return { ok: false, reason: `${run.file} could not run (${result.spawnError.code})`, stderr };
  if (result.timedOut)
    return { ok: false, reason: `${run.file} gave no result within ${run.timeoutMs / 1000} s and was killed`, stderr };
  if (result.aborted) return { ok: false, reason: `${run.file} stopped: shutting down`, stderr };
  if (result.stdoutTruncated)
    return { ok: false, reason: `${run.file} printed more than ${run.maxBytes} bytes`, stderr };
  if (result.exitCode === 0) return { ok: true, stdout: Buffer.from(result.stdout, 'utf8') };
  if (result.exitCode !== null) {
    return {
      ok: false,
      reason: `${run.file} exited with status ${result.exitCode}${stderr ? `: ${stderr}` : ''}`,
      exitCode: result.exitCode,
      stderr,
    };
  }
  return { ok: false, reason: `${run.file} could not run (${result.signal ?? 'unknown error'})`, stderr };
}
