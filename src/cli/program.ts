import { Command, CommanderError } from 'commander';
import { AgentError } from '../errors.js';
import { scrubText } from '../log/redact.js';
import { VERSION } from '../version.js';
import { firstOperandIndex, normaliseArgv } from './argv-normalise.js';
import { AGENT_COMMAND, isCfnCommand, type CommandName } from './command-names.js';

// The commander program every command name runs in, and how its outcome becomes the process's exit code.

export type ProgramName = CommandName;

/** What `--version` prints: the project's name and version, and for a compatibility name whose command it is. */
export function versionLine(name: ProgramName): string {
  return name === AGENT_COMMAND ? `${AGENT_COMMAND} ${VERSION}` : `${name} (${AGENT_COMMAND}) ${VERSION}`;
}

/**
 * A program with the agent's version flag and commander's exits turned into exceptions. Options before a subcommand
 * are the program's (the global flags), those after it the subcommand's: `cfn-signal -d` is its data, never --debug.
 */
export function newProgram(name: ProgramName): Command {
  return new Command(name)
    .version(versionLine(name), '--version', 'print the version and exit')
    .helpOption('-h, --help', 'print this help and exit')
    .exitOverride()
    .enablePositionalOptions()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) });
}

/**
 * A usage error is one line, `<command>: <what is wrong>`, then where to look: never the whole help, which buries the
 * line that matters. Set on every command of the program once they are all defined.
 */
export function pointUsageErrorsToHelp(program: Command): void {
  for (const cmd of [program, ...program.commands]) {
    const path = commandPath(cmd);
    cmd.showHelpAfterError(`Try '${path} --help' for its options.`);
    cmd.configureOutput({
      writeErr: (s) => process.stderr.write(s),
      outputError: (message, write) => write(`${path}: ${usageLine(message)}\n`),
    });
  }
}

/** commander's "error: unknown option '--jsn'\n(Did you mean --json?)" as one line. */
function usageLine(message: string): string {
  return message
    .trim()
    .replace(/^error: /, '')
    .replace(
      /\s*\n\((Did you mean [^)]*)\)/,
      (_m, hint: string) => ` (${hint.charAt(0).toLowerCase()}${hint.slice(1)})`,
    )
    .replace(/\s*\n\s*/g, ' ');
}

/** `os-config-agent status`: the names from the program down to `cmd`. */
export function commandPath(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/** Run `program` on `args`: the exit code its action set, 0 for --help and --version, 2 for a usage error, 1 for a failure. */
export async function parseProgram(
  program: Command,
  args: readonly string[],
  name: ProgramName,
  exitCode: () => number,
): Promise<number> {
  pointUsageErrorsToHelp(program);
  try {
    // oslo's flag spellings are not heat-cfntools', and their values (-d, -r, -c) are free text that must reach them
    // untouched; global flags before the subcommand are the agent's own.
    const sub = firstOperandIndex(args);
    const argv = isCfnCommand(name)
      ? [...args]
      : sub !== -1 && isCfnCommand(args[sub] ?? '')
        ? [...normaliseArgv(args.slice(0, sub)), ...args.slice(sub)]
        : normaliseArgv(args);
    await program.parseAsync(argv, { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version exit 0; usage errors exit 2 like argparse/oslo.
      return err.exitCode === 0 ? 0 : 2;
    }
    if (err instanceof AgentError) {
      process.stderr.write(`${name}: ${err.message} [${err.code}]\n`);
      return 1;
    }
    // Not one of ours (a library's error, a bug): its message may quote a URL or a header, so it is scrubbed as an
    // AgentError's message is when it is made.
    process.stderr.write(`${name}: ${scrubText(String((err as Error).message))}\n`);
    return 1;
  }
  return exitCode();
}
