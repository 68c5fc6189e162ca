// The one place a collector starts a system tool (blkid, mount, bsdtar, mcopy): argument vector, never a shell; no
// stdin; a time limit after which the tool is killed; stdout capped (a tool printing without end is an error, not a
// memory problem). execa is loaded on first use, so a cycle that never looks for a config drive does not pay for it.
// Every failure comes back as a value with a short reason an operator can act on; nothing here throws.

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
  | { readonly ok: false; readonly reason: string; readonly exitCode?: number; readonly missing?: boolean; readonly stderr: string };

const STDERR_SHOWN = 300;

export async function runTool(run: ToolRun): Promise<ToolResult> {
  const { execa } = await import('execa');
  const result = await execa(run.file, [...run.args], {
    reject: false,
    stdin: 'ignore',
    encoding: 'buffer',
    stripFinalNewline: false,
    timeout: run.timeoutMs,
    maxBuffer: { stdout: run.maxBytes, stderr: 64 * 1024 },
    forceKillAfterDelay: 2000,
    ...(run.env ? { env: run.env, extendEnv: true } : {}),
    ...(run.signal ? { cancelSignal: run.signal } : {}),
  });
  const stderr = Buffer.from(result.stderr ?? new Uint8Array()).toString('utf8').trim().slice(0, STDERR_SHOWN);
  if (!result.failed) return { ok: true, stdout: Buffer.from(result.stdout ?? new Uint8Array()) };
  const code = (result.cause as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ENOENT') return { ok: false, reason: `${run.file} is not installed`, missing: true, stderr };
  if (result.timedOut) return { ok: false, reason: `${run.file} gave no result within ${run.timeoutMs / 1000} s and was killed`, stderr };
  if (result.isCanceled) return { ok: false, reason: `${run.file} stopped: shutting down`, stderr };
  if (result.isMaxBuffer) return { ok: false, reason: `${run.file} printed more than ${run.maxBytes} bytes`, stderr };
  if (result.exitCode !== undefined) {
    return { ok: false, reason: `${run.file} exited with status ${result.exitCode}${stderr ? `: ${stderr}` : ''}`, exitCode: result.exitCode, stderr };
  }
  return { ok: false, reason: `${run.file} could not run (${code ?? result.signal ?? 'unknown error'})`, stderr };
}
