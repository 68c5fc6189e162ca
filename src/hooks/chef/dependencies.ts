import { readFile, rename } from 'node:fs/promises';
import { HookFailure, type HookContext } from '../contract.js';
import { toolCommand } from '../kit/choose-tool.js';
import { notInstalled, runTool, type ToolOutcome } from '../kit/run-tool.js';
import { BERKS, CHEF_CLI, neededBecause } from './tools.js';
import { makeDirs, removeFiles } from '../kit/work-files.js';
import { lastLines } from './git-source.js';
import path from 'node:path';

// Dependency resolution, as Chef users run it before chef-solo: `berks vendor` for a Berksfile (the cookbooks it
// names and their dependencies, each in a directory of its name), `chef install` then `chef export` for a Policyfile
// (the locked cookbooks and the policy, as a repository chef-client runs in policy mode). Each writes into a new
// directory that replaces the last one only when the tool succeeded.

/** `berks vendor` run in the source: the resolved cookbooks end up in `target`. */
export async function berksVendor(ctx: HookContext, source: string, target: string, label: string): Promise<void> {
  const command = await toolCommand(ctx, BERKS);
  await replaceWhenWritten(target, async (partial) => {
    const run = await runTool(
      ctx,
      { file: command, args: ['vendor', partial], cwd: source, env: ctx.env },
      notInstalled(ctx.env, neededBecause(BERKS, `${label} has a Berksfile.`), command),
    );
    failed(run, `${label}: berks vendor failed for the Berksfile in ${source}`);
  });
}

/** `chef install` and `chef export` of the source's Policyfile.rb into `target`; returns the policy's name. */
export async function exportPolicy(ctx: HookContext, source: string, target: string, label: string): Promise<string> {
  const command = await toolCommand(ctx, CHEF_CLI);
  const missing = notInstalled(ctx.env, neededBecause(CHEF_CLI, `${label} has a Policyfile.rb.`), command);
  const install = await runTool(
    ctx,
    { file: command, args: ['install', 'Policyfile.rb'], cwd: source, env: ctx.env },
    missing,
  );
  failed(install, `${label}: chef install failed for the Policyfile.rb in ${source}`);
  return replaceWhenWritten(target, async (partial) => {
    const run = await runTool(
      ctx,
      { file: command, args: ['export', 'Policyfile.rb', partial], cwd: source, env: ctx.env },
      missing,
    );
    failed(run, `${label}: chef export failed for the Policyfile.rb in ${source}`);
    return policyName(partial, label);
  });
}

/**
 * `write` fills `<target>.partial`; only when it returns does that directory replace `target`. A failure leaves the
 * last good `target` and no partial one behind.
 */
async function replaceWhenWritten<T>(target: string, write: (partial: string) => Promise<T>): Promise<T> {
  const partial = `${target}.partial`;
  await removeFiles(partial);
  await makeDirs(path.dirname(target));
  try {
    const value = await write(partial);
    await removeFiles(target);
    await rename(partial, target);
    return value;
  } finally {
    await removeFiles(partial);
  }
}

/** The policy's name from the exported lock file (chef-client needs it as policy_name). */
async function policyName(exported: string, label: string): Promise<string> {
  let name: unknown;
  try {
    const lock = JSON.parse(await readFile(path.join(exported, 'Policyfile.lock.json'), 'utf8')) as { name?: unknown };
    name = lock.name;
  } catch (err) {
    throw new HookFailure(`${label}: chef export left no readable Policyfile.lock.json (${(err as Error).message})`);
  }
  if (typeof name !== 'string' || name === '' || /\p{Cc}/u.test(name))
    throw new HookFailure(`${label}: the exported Policyfile.lock.json has no policy name`);
  return name;
}

function failed(run: ToolOutcome, what: string): void {
  if (run.status !== 0) throw new HookFailure(`${what} (status ${run.status})${lastLines(run.stderr || run.stdout)}`);
}
