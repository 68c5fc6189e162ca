import type { Command } from 'commander';
import { firstOperandIndex } from './argv-normalise.js';
import { COMMON_HEADING, commandRun, type CommandContext } from './command-context.js';
import { AGENT_COMMAND, isCfnTool } from './command-names.js';
import { newProgram, parseProgram, type ProgramName } from './program.js';
import { SUBCOMMANDS } from './subcommands.js';

// Entry point. One bundle serves every command name (src/cli/command-names.ts): `os-config-agent <subcommand>` and the
// compatibility names, chosen by the name the program was started as.

/** Which subcommands to define in full: all of them (help, the manual pages, completion) or only `wanted`. */
export interface Definition {
  readonly all: boolean;
  readonly wanted?: string;
}

/** The program of one command name, with its subcommands defined as `definition` asks; nothing is parsed. */
export async function buildProgram(name: ProgramName, ctx: CommandContext, definition: Definition): Promise<Command> {
  const program = newProgram(name);
  if (name === 'os-collect-config') {
    program.description(
      'Collect metadata from cloud sources and run a command when it changes (os-collect-config compatible).',
    );
    (await import('./collect-command.js')).defineCollectCommand(program, ctx, { strictExit: false });
    (await import('./common-flags.js')).addCommonFlags(program, COMMON_HEADING);
  } else if (name === 'os-apply-config') {
    // compat: os-apply-config
    (await import('./os-apply-config-command.js')).defineOsApplyConfigCommand(program, ctx);
  } else if (name === 'os-refresh-config') {
    // compat: os-refresh-config
    (await import('./refresh-command.js')).defineRefreshCompatCommand(program, ctx);
  } else if (isCfnTool(name)) {
    // compat: heat-cfntools' commands; started by their names, they do not come through here (src/bin.ts)
    await (await import('./cfn-main.js')).defineCfnProgram(program, name, ctx);
  } else if (name === 'cfn-signal') {
    program.description(
      'Signal a wait condition (heat-cfntools cfn-signal compatible), through the os-config-agent signal queue.',
    );
    (await import('./cfn-signal-command.js')).defineCfnSignalCommand(program, ctx, 'cfn-signal');
  } else {
    program.description('In-instance agent for OpenStack Heat software configuration.');
    // The global flags: given before the subcommand, they apply to it (`os-config-agent --root /mnt status`). Loaded
    // here, not by the compatibility commands: they bring the logger (pino), which heat-cfntools' commands never use.
    (await import('./common-flags.js')).addCommonFlags(program);
    program.addHelpText('after', `\nRun '${AGENT_COMMAND} <command> --help' for the options of a command.`);
    for (const sub of SUBCOMMANDS) {
      const cmd = program.command(sub.name).description(sub.description);
      if (definition.all || definition.wanted === sub.name) await (await sub.load())(cmd, ctx);
    }
  }
  return program;
}

export async function main(args: readonly string[], name: ProgramName): Promise<number> {
  const { ctx, argv, exitCode } = commandRun(args);
  const operand = firstOperandIndex(argv);
  const wanted = operand === -1 ? undefined : argv[operand];
  // `os-config-agent --help` lists the commands only; `help <command>` and `<command> --help` define that one.
  const helpOf = wanted === 'help' ? argv[operand + 1] : wanted;
  const program = await buildProgram(name, ctx, { all: false, ...(helpOf !== undefined ? { wanted: helpOf } : {}) });
  return parseProgram(program, argv, name, exitCode);
}
