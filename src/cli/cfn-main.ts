import type { Command } from 'commander';
import { commandRun, type CommandContext } from './command-context.js';
import type { CfnToolName } from './command-names.js';
import { newProgram, parseProgram } from './program.js';

// heat-cfntools' commands that fetch and apply metadata, started by their own names (cfn-init, cfn-hup, ...).
// Templates run cfn-init on every boot and cfn-hup from cron every few minutes, so their start-up is what users wait
// for. The build makes this module and all it loads one CommonJS file of its own (dist/chunks/cfn-main.cjs), which
// their entry (src/cfn-bin.ts) requires, and the agent's entry imports for these names: Node resolves, reads and links
// each ES module file on its own, and through the shared chunks of the agent's bundle cfn-hup loaded 46 of them, ~35 ms
// of CPU more than the same code in one file (docs/performance.md). cfn-signal, the agent's signal queue with its
// transports and logger, stays in the agent's bundle: in this file its code would be compiled by every cfn-hup run.

/** Define `name`'s options and action on `program` (also for the manual pages and the completion). */
export async function defineCfnProgram(program: Command, name: CfnToolName, ctx: CommandContext): Promise<void> {
  program.description(`${name}: heat-cfntools' ${name}, by os-config-agent (docs/cfntools.md).`);
  const { setExit } = ctx;
  if (name === 'cfn-init') (await import('./cfn-init-command.js')).defineCfnInitCommand(program, setExit);
  else if (name === 'cfn-get-metadata')
    (await import('./cfn-get-metadata-command.js')).defineCfnGetMetadataCommand(program, setExit);
  else if (name === 'cfn-hup') (await import('./cfn-hup-command.js')).defineCfnHupCommand(program, setExit);
  else if (name === 'cfn-push-stats')
    (await import('./cfn-aws-commands.js')).defineCfnPushStatsCommand(program, setExit);
  else (await import('./cfn-aws-commands.js')).defineCfnCreateAwsSymlinksCommand(program, setExit);
}

/** Run heat-cfntools' command `name` on `args`: its exit code. */
export async function cfnMain(args: readonly string[], name: CfnToolName): Promise<number> {
  const { ctx, argv, exitCode } = commandRun(args);
  const program = newProgram(name);
  await defineCfnProgram(program, name, ctx);
  return parseProgram(program, argv, name, exitCode);
}
