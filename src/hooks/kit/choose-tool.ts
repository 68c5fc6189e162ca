import { findExecutable } from '../../util/executable.js';
import type { HookContext } from '../contract.js';
import type { ToolCandidate, ToolDeclaration } from '../declaration.js';

// Which program a hook starts, from its declaration: the one rule the hooks use to choose and doctor uses to judge
// them. The variable when set; else the first default installed; else upstream's default, whose start then fails
// and says what to install.

export interface ToolChoice {
  /** The program to start. */
  readonly file: string;
  /** Arguments before the hook's own (["compose"] for a subcommand). */
  readonly prefix: readonly string[];
  /** The file `file` names (found in PATH), or undefined when it is not installed. */
  readonly found: string | undefined;
  /**
   * variable: named by the declaration's variable; default: upstream's default (or a subcommand), installed;
   * stand-in: a later default, installed; fallback: nothing installed, upstream's default all the same.
   */
  readonly by: 'variable' | 'default' | 'stand-in' | 'fallback';
  /** For a subcommand: the choice of the program it belongs to. */
  readonly of?: ToolChoice;
}

/** Runs `<file> <args>` and says whether it exited 0: how a subcommand is probed (the hook's spawn, or doctor's). */
export type Probe = (file: string, args: readonly string[]) => Promise<boolean>;

/** The program `tool` makes the hook start under `env`; undefined when its variable is unset and it has no default. */
export async function chooseTool(
  tool: ToolDeclaration,
  env: NodeJS.ProcessEnv,
  probe: Probe,
): Promise<ToolChoice | undefined> {
  const named = tool.variable ? env[tool.variable] : undefined;
  if (named) return { file: named, prefix: [], found: await findExecutable(named, env), by: 'variable' };
  for (const candidate of tool.defaults) {
    const choice = await installed(candidate, tool, env, probe);
    if (choice) return choice;
  }
  const fallback = upstreamDefault(tool);
  return fallback === undefined ? undefined : { file: fallback, prefix: [], found: undefined, by: 'fallback' };
}

async function installed(
  candidate: ToolCandidate,
  tool: ToolDeclaration,
  env: NodeJS.ProcessEnv,
  probe: Probe,
): Promise<ToolChoice | undefined> {
  if (typeof candidate !== 'string') {
    const of = await chooseTool(candidate.of, env, probe);
    if (of === undefined || !(await probe(of.file, candidate.probe))) return undefined;
    return { file: of.file, prefix: candidate.args, found: of.found, by: 'default', of };
  }
  const found = await findExecutable(candidate, env);
  if (found === undefined) return undefined;
  return candidate === upstreamDefault(tool)
    ? { file: candidate, prefix: [], found, by: 'default' }
    : { file: found, prefix: [], found, by: 'stand-in' };
}

/** The first command name of the defaults: upstream's. */
function upstreamDefault(tool: ToolDeclaration): string | undefined {
  return tool.defaults.find((c): c is string => typeof c === 'string');
}

/** The names a choice was made among, for a message: the variable's value, else the defaults ("docker or podman"). */
export function candidateNames(tool: ToolDeclaration, env: NodeJS.ProcessEnv): string {
  const named = tool.variable ? env[tool.variable] : undefined;
  if (named) return named;
  return tool.defaults.map((c) => (typeof c === 'string' ? c : `"${c.of.name} ${c.args.join(' ')}"`)).join(' or ');
}

/** A probe through the hook's own spawn: stopped with the deployment, like any tool it starts. */
export function spawnProbe(ctx: HookContext): Probe {
  return async (file, args) => (await ctx.spawn({ file, args: [...args], env: ctx.env })).exitCode === 0;
}

/** The command a hook starts for a tool that has a default: its variable, a default installed, or upstream's. */
export async function toolCommand(ctx: HookContext, tool: ToolDeclaration): Promise<string> {
  const choice = await chooseTool(tool, ctx.env, spawnProbe(ctx));
  // A declaration without defaults: a defect of the hook, which its own tests catch.
  if (choice === undefined) throw new Error(`the declaration of ${tool.name} has no default command`);
  return choice.file;
}
