import { HookFailure, type HookContext, type ToolRun } from '../contract.js';
import { formatCommand } from '../kit/run-tool.js';
import { errorMessage } from '../../errors.js';
import type { DownloadingHttpClient } from '../../http/types.js';
import { MAX_DOWNLOAD_BYTES } from './download.js';

// What one cfn-init run carries from step to step: where files go, what the tools printed (the hook's result), and
// what changed (services named on a changed file, source, package or command restart).

export interface InitRun {
  readonly ctx: HookContext;
  /** OS_CONFIG_AGENT_ROOT, or "" on an instance: file paths of the metadata land under it. */
  readonly root: string;
  /** Seconds a source download may stay silent before it fails. */
  readonly fetchTimeoutSeconds: number;
  /** The HTTP client, loaded on first use (a run without URLs never loads it). */
  http(): Promise<DownloadingHttpClient>;
  readonly stdout: string[];
  readonly stderr: string[];
  /** "file:/path", "source:/dir", "package:apt:name", "command:name" of what this run changed. */
  readonly changed: Set<string>;
  /** User and group ids found so far ("passwd:name", "group:name"). */
  readonly accounts: Map<string, number>;
}

/** A run's starting state: nothing printed, nothing changed yet; the HTTP client loaded on the first download. */
export function createInitRun(ctx: HookContext, root: string, fetchTimeoutSeconds: number): InitRun {
  let client: Promise<DownloadingHttpClient> | undefined;
  return {
    ctx,
    root,
    fetchTimeoutSeconds,
    // The HTTP client and Node's http: a run without URLs never loads them.
    http: () =>
      (client ??= import('../../http/client.js').then((m) =>
        m.createHttpClient({
          defaultMaxBytes: MAX_DOWNLOAD_BYTES,
          defaultRetries: 2,
          proxy: { config: {}, env: ctx.env },
        }),
      )),
    stdout: [],
    stderr: [],
    changed: new Set(),
    accounts: new Map(),
  };
}

export interface ToolStatus {
  /** Exit status; 127 when the program was not found, 128 + n when killed by signal n. */
  readonly status: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a program (through ctx.spawn: the one place processes start) and keeps nothing of its output. */
export async function tool(run: InitRun, spec: ToolRun): Promise<ToolStatus> {
  const res = await run.ctx.spawn({ env: run.ctx.env, ...spec });
  if (res.spawnError) {
    return {
      status: res.spawnError.code === 'ENOENT' ? 127 : 126,
      stdout: '',
      stderr: `${spec.file}: ${res.spawnError.message}\n`,
    };
  }
  const status = res.exitCode ?? 128 + signalNumber(res.signal);
  return { status, stdout: res.stdout, stderr: res.stderr };
}

/** Runs a program whose failure stops the run: the failure names the resource, the command and its output. */
export async function mustRun(run: InitRun, resource: string, spec: ToolRun, missing?: string): Promise<ToolStatus> {
  run.ctx.log.info('running tool', { resource, command: formatCommand(spec.file, spec.args ?? []) });
  const res = await tool(run, spec);
  if (res.status === 127 && missing) throw new HookFailure(`cfn-init: ${resource}: ${missing}`);
  if (res.status !== 0) {
    const said = (res.stderr.trim() || res.stdout.trim()).split('\n').slice(-5).join('\n');
    throw new HookFailure(
      `cfn-init: ${resource}: ${formatCommand(spec.file, spec.args ?? [])} failed with status ${res.status}${said ? `:\n${said}` : ''}`,
    );
  }
  return res;
}

const SIGNALS: Readonly<Record<string, number>> = {
  SIGHUP: 1,
  SIGINT: 2,
  SIGQUIT: 3,
  SIGABRT: 6,
  SIGKILL: 9,
  SIGSEGV: 11,
  SIGPIPE: 13,
  SIGTERM: 15,
};
function signalNumber(signal: string | null): number {
  return signal ? (SIGNALS[signal] ?? 0) : 0;
}

/** Runs one resource's step; a system error (EACCES, ENOSPC, EISDIR...) becomes a failure naming the resource. */
export async function forResource<T>(resource: string, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (err) {
    if (err instanceof HookFailure) throw err;
    throw new HookFailure(`cfn-init: ${resource}: ${errorMessage(err)}`);
  }
}
