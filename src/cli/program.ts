import { Command, CommanderError } from 'commander';
import { AgentError } from '../errors.js';
import { VERSION } from '../version.js';
import { normaliseArgv } from './argv-normalise.js';
import { isCfnCommand, type CommandName } from './command-names.js';

// The commander program every command name runs in, and how its outcome becomes the process's exit code.

export type ProgramName = CommandName;

/** A program with the agent's version flag, commander's exits turned into exceptions, and help after usage errors. */
export function newProgram(name: ProgramName): Command {
  const program = new Command(name)
    .version(VERSION, '--version')
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) });
  program.showHelpAfterError();
  return program;
}

/** Run `program` on `args`: the exit code its action set, 0 for --help and --version, 2 for a usage error, 1 for a failure. */
export async function parseProgram(
  program: Command,
  args: readonly string[],
  name: ProgramName,
  exitCode: () => number,
): Promise<number> {
  try {
    // oslo's flag spellings are not heat-cfntools', and their values (-d, -r, -c) are free text that must reach them
    // untouched.
    const cfnTool = isCfnCommand(name) || isCfnCommand(args[0] ?? '');
    await program.parseAsync(cfnTool ? [...args] : normaliseArgv(args), { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version exit 0; usage errors exit 2 like argparse/oslo.
      return err.exitCode === 0 ? 0 : 2;
    }
    if (err instanceof AgentError) {
      process.stderr.write(`${name}: ${err.message} [${err.code}]\n`);
      return 1;
    }
    process.stderr.write(`${name}: ${(err as Error).message}\n`);
    return 1;
  }
  return exitCode();
}
