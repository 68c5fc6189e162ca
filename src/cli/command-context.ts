// What main hands every command module when it defines its command: where the exit code goes, and whether help is to
// list every configuration override (`--help-all`).

export interface CommandContext {
  readonly setExit: (code: number) => void;
  readonly helpAll: boolean;
}

/** One run of a program: the context its commands get, its arguments with `--help-all` read as `--help`, its exit code. */
export interface CommandRun {
  readonly ctx: CommandContext;
  readonly argv: string[];
  exitCode(): number;
}

export function commandRun(args: readonly string[]): CommandRun {
  let exitCode = 0;
  return {
    ctx: {
      setExit: (code) => {
        exitCode = code;
      },
      helpAll: args.includes('--help-all'),
    },
    argv: args.map((a) => (a === '--help-all' ? '--help' : a)),
    exitCode: () => exitCode,
  };
}

/** The help heading of the flags every command shares, listed after the command's own. */
export const COMMON_HEADING = 'Common options:';
