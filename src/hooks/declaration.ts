import type { BuiltinHook } from './contract.js';

// What a built-in hook says about itself, beside its code: the group it serves and the program it drives. The hook
// chooses its program from this declaration (kit/choose-tool.ts), and `doctor` judges the hook by the same
// declaration through the same choice, so what doctor says is what the hook does. Every module of groups/ exports
// one, and the registry refuses a module without it.

/** A program a hook drives outside the agent. */
export interface ToolDeclaration {
  /** What the program is, in messages: "puppet", "docker". */
  readonly name: string;
  /** The variable naming the command (upstream's name); set and not empty, its value is used as given. */
  readonly variable?: string;
  /**
   * What runs while the variable is unset, in order of preference: the first one installed is used. The first command
   * name among them is upstream's default: it is started by its name, and it is the choice when none is installed, so
   * that the failure names what upstream would have run; a later name that stands in is started by the path found, so
   * the log shows which program ran. Empty when the hook does the work itself unless the variable names a program
   * (cfn-init, apply-config).
   */
  readonly defaults: readonly ToolCandidate[];
  /** The sentence telling the operator what to install. */
  readonly install: string;
  /** A service the program talks to, which must be running for the hook to work (doctor names it, not checks it). */
  readonly daemon?: string;
}

/** A command name looked up in PATH, or a subcommand of another program. */
export type ToolCandidate = string | SubcommandCandidate;

/** A subcommand (`docker compose`): installed when the program is and `probe` exits 0. */
export interface SubcommandCandidate {
  readonly of: ToolDeclaration;
  /** Arguments before the hook's own (["compose"]). */
  readonly args: readonly string[];
  /** Arguments of the run that tells whether the subcommand exists (["compose", "version"]). */
  readonly probe: readonly string[];
}

export interface HookDeclaration {
  /** The deployment group, which is also the module's name in groups/ and the hook's file name. */
  readonly group: string;
  /** The program it drives; undefined when it drives none (it writes files, or does its work in the agent's code). */
  readonly tool?: ToolDeclaration;
}

/** What a module of groups/ exports. */
export interface HookModule {
  readonly declaration: HookDeclaration;
  readonly hook: BuiltinHook;
}
