import type { Command } from 'commander';
import { DEFAULT_COLLECTORS } from '../config/options.js';
import { createLogger } from '../log/logger.js';
import { mergePairs } from '../daemon/collect-all.js';
import { pythonJsonDumps } from '../util/python-json.js';
import { buildAgent } from './agent-factory.js';
import type { CommandContext } from './command-context.js';
import { addCommonFlags, commonFlagsOf, configureLogger, configSources, COMMON_HEADING } from './common-flags.js';
import { addConfigOptions, ALL_OPTIONS, readConfigOverrides } from './config-options.js';
import { installSignalHandlers } from './process-signals.js';
import { printData } from './quiet-epipe.js';
import { LOOP_OPTIONS } from './run-command.js';

// `os-config-agent collect` and the compatibility command `os-collect-config`: upstream flags and behaviour.
// Without a command (or with --print) the merged metadata is printed as JSON and the process exits; with a command
// the loop runs (once with --one-time / --force).

/** `collect`'s own flags: the loop's, and what it prints or runs. */
const COLLECT_OPTIONS = [...LOOP_OPTIONS, 'DEFAULT.command', 'DEFAULT.print_only', 'DEFAULT.print_cachedir'];

/** `os-config-agent collect`: an unreachable source is not a failure only for os-collect-config, as upstream. */
export function defineCollectSubcommand(cmd: Command, ctx: CommandContext): Command {
  defineCollectCommand(cmd, ctx, { strictExit: true });
  return addCommonFlags(cmd, COMMON_HEADING);
}

/** The flags and action of `collect` (the common flags are added by the caller: the program's, or the subcommand's). */
export function defineCollectCommand(cmd: Command, ctx: CommandContext, options: { strictExit: boolean }): Command {
  const bindings = addConfigOptions(cmd, { scope: ALL_OPTIONS, own: COLLECT_OPTIONS, helpAll: ctx.helpAll });
  cmd.argument('[collectors...]', `collectors to use, in order (default: ${DEFAULT_COLLECTORS.join(' ')})`);
  cmd.action(async (collectors: string[]) => {
    const unknown = collectors.filter((c) => !(DEFAULT_COLLECTORS as readonly string[]).includes(c));
    if (unknown.length > 0)
      cmd.error(
        `unknown collector ${unknown.map((c) => `"${c}"`).join(', ')} (known: ${DEFAULT_COLLECTORS.join(', ')})`,
      );
    const flags = commonFlagsOf(cmd);
    const cli = readConfigOverrides(cmd, bindings);
    if (collectors.length > 0) (cli.DEFAULT ??= {}).collectors = collectors;
    const bootLog = createLogger({ level: flags.debug ? 'debug' : (flags.logLevel ?? 'info'), destination: 'stderr' });
    const agent = await buildAgent(configSources(flags, cli), bootLog, 'collect', options.strictExit);
    const config = agent.loaded.config;
    configureLogger(bootLog, flags, config.agent);
    if (config.DEFAULT.print_cachedir) {
      printData(`${config.DEFAULT.cachedir}\n`);
      ctx.setExit(0);
      return;
    }
    const handlers = installSignalHandlers(bootLog, () => agent.requestReload());
    try {
      if (config.DEFAULT.print_only || !config.DEFAULT.command) {
        const outcome = await agent.collectOnly(handlers.signal);
        printData(`${pythonJsonDumps(mergePairs(outcome.pairs), { indent: 1 })}\n`);
        const bad = options.strictExit && outcome.failures.some((f) => f.code !== 'ERR_SOURCE_UNAVAILABLE');
        ctx.setExit(bad ? 1 : 0);
        return;
      }
      ctx.setExit(await agent.run(handlers.signal));
    } finally {
      handlers.dispose();
    }
  });
  return cmd;
}
