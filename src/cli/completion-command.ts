import { Argument, type Command } from 'commander';
import type { CommandContext } from './command-context.js';
import { COMMAND_NAMES } from './command-names.js';
import { printData } from './quiet-epipe.js';

// `os-config-agent completion [bash]`: the completion script of every command name, from their definitions. The
// Debian package installs it (/usr/share/bash-completion/completions); elsewhere: `source <(os-config-agent
// completion)`.

export function defineCompletionCommand(cmd: Command, ctx: CommandContext): Command {
  cmd.addArgument(new Argument('[shell]', 'the shell to complete for').choices(['bash']).default('bash'));
  cmd.action(async () => {
    const { bashCompletion } = await import('./completion.js');
    const { buildProgram } = await import('./main.js');
    const quiet: CommandContext = { setExit: () => undefined, helpAll: true };
    const programs = [];
    for (const name of COMMAND_NAMES) programs.push(await buildProgram(name, quiet, { all: true }));
    printData(bashCompletion(programs));
    ctx.setExit(0);
  });
  return cmd;
}
