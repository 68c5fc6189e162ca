import { open } from 'node:fs/promises';
import { constants as osConstants } from 'node:os';
import path from 'node:path';
import { HookFailure, type HookContext, type ToolRun } from '../contract.js';
import type { ToolDeclaration } from '../declaration.js';
import { findExecutable } from '../../util/executable.js';
import { redactArgs } from '../../log/redact-command.js';

// Running a hook's tool and reading what it did.

export interface ToolOutcome {
  /** Exit status, or 128 + the signal number when the tool was killed. */
  readonly status: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs a tool. A tool that cannot be found fails the hook with `missing` (which tool, what to install), one that is
 * there but whose interpreter is not says so (`interpreterMissing`, for a program the deployment wrote itself; else
 * the installed tool's message); any other start failure fails it with the system's reason.
 */
export async function runTool(
  ctx: HookContext,
  run: ToolRun,
  missing: string,
  interpreterMissing: (found: string, interpreter: string) => string = installedToolInterpreterMissing,
): Promise<ToolOutcome> {
  const tool = path.basename(run.file);
  ctx.log.info('running tool', { command: formatCommand(run.file, run.args ?? []) });
  const res = await ctx.spawn(run);
  if (res.spawnError) {
    if (res.spawnError.code === 'ENOENT') {
      const found = await missingInterpreter(run);
      throw new HookFailure(found ? interpreterMissing(found.file, found.interpreter) : missing);
    }
    throw new HookFailure(`could not run ${run.file}: ${res.spawnError.message}`);
  }
  let status = res.exitCode;
  let stderr = res.stderr;
  if (status === null) {
    status = 128 + (osConstants.signals[res.signal as NodeJS.Signals] ?? 0);
    const separator = stderr === '' || stderr.endsWith('\n') ? '' : '\n';
    stderr += `${separator}${tool} was killed by ${res.signal}\n`;
  }
  ctx.log.info('tool exited', { tool, exitCode: status });
  return { status, stdout: res.stdout, stderr };
}

/**
 * exec(2) says ENOENT both for a missing program and for a script whose #! interpreter is missing (a package half
 * removed, a ruby or python gone): the message for the second names the interpreter rather than "not installed".
 */
async function missingInterpreter(run: ToolRun): Promise<{ file: string; interpreter: string } | undefined> {
  const found = await findExecutable(run.file, run.env ?? {});
  if (found === undefined) return undefined;
  let head = '';
  try {
    const file = await open(found, 'r');
    try {
      const { buffer, bytesRead } = await file.read(Buffer.alloc(256), 0, 256, 0);
      head = buffer.subarray(0, bytesRead).toString('utf8');
    } finally {
      await file.close();
    }
  } catch {
    return undefined;
  }
  if (!head.startsWith('#!')) return undefined;
  return { file: found, interpreter: head.slice(2).split('\n')[0]!.trim().split(/\s+/)[0] ?? '' };
}

function installedToolInterpreterMissing(found: string, interpreter: string): string {
  return `${found} is there but cannot start: the interpreter its first line names (${interpreter}) is not installed. Reinstall the package that provides ${path.basename(found)}, or install ${interpreter}.`;
}

/** Quotes an argv for a log line, secret-named options' and assignments' values replaced (log/redact-command.ts). */
export function formatCommand(command: string, args: readonly string[]): string {
  const quote = (a: string) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, "'\\''")}'`);
  return [command, ...redactArgs(args)].map(quote).join(' ');
}

/** The message for a tool that is not installed: which, the command looked for, what to install, the variable. */
export function notInstalled(env: NodeJS.ProcessEnv, tool: ToolDeclaration, command: string): string {
  const variable = tool.variable ? ` Or set ${tool.variable} to the command's path.` : '';
  return `${tool.name} is not installed: the command "${command}" was not found (PATH=${env.PATH ?? ''}). ${tool.install}${variable}`;
}

/** `hostname -f`, or null (with a warning) when it fails. */
export async function hostnameF(ctx: HookContext): Promise<string | null> {
  const res = await ctx.spawn({ file: 'hostname', args: ['-f'], env: ctx.env });
  const name = res.spawnError ? '' : res.stdout.trim();
  if (res.exitCode === 0 && name !== '') return name;
  ctx.log.warn('"hostname -f" failed', {
    reason: res.spawnError ? res.spawnError.message : `status ${res.exitCode}: ${res.stderr.trim()}`,
  });
  return null;
}
