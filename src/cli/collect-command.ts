import type { Command } from 'commander';
import { createLogger, parseLogLevel } from '../log/logger.js';
import { mergePairs } from '../daemon/collect-all.js';
import { pythonJsonDumps } from '../util/python-json.js';
import { buildAgent } from './agent-factory.js';
import { addCommonFlags, chooseLogLevel, configSources, type CommonFlags } from './common-flags.js';
import { addConfigOptions, readConfigOverrides } from './config-options.js';
import { installSignalHandlers } from './process-signals.js';
import { printData } from './quiet-epipe.js';

// `os-config-agent collect` and the compatibility command `os-collect-config`: upstream flags and behaviour.
// Without a command (or with --print) the merged metadata is printed as JSON and the process exits; with a command
// the loop runs (once with --one-time / --force).

export function defineCollectCommand(
  cmd: Command,
  options: { strictExit: boolean; setExit: (code: number) => void },
): Command {
  addCommonFlags(cmd);
  const bindings = addConfigOptions(cmd);
  cmd.argument('[collectors...]', 'collectors to use, in order (default: heat_local ec2 cfn heat request local zaqar)');
  cmd.action(async (collectors: string[]) => {
    const flags = cmd.opts<CommonFlags>();
    if (flags.logLevel) parseLogLevel(flags.logLevel);
    const cli = readConfigOverrides(cmd, bindings);
    if (collectors.length > 0) (cli.DEFAULT ??= {}).collectors = collectors;
    const bootLog = createLogger({ level: flags.debug ? 'debug' : 'info', destination: 'stderr' });
    const agent = await buildAgent(configSources(flags, cli), bootLog, 'collect', options.strictExit);
    const config = agent.loaded.config;
    const level = chooseLogLevel(flags, config.agent.log_level);
    bootLog.level = level;
    if (config.DEFAULT.print_cachedir) {
      printData(`${config.DEFAULT.cachedir}\n`);
      options.setExit(0);
      return;
    }
    const handlers = installSignalHandlers(bootLog, () => agent.requestReload());
    try {
      if (config.DEFAULT.print_only || !config.DEFAULT.command) {
        const outcome = await agent.collectOnly(handlers.signal);
        printData(`${pythonJsonDumps(mergePairs(outcome.pairs), { indent: 1 })}\n`);
        const bad = options.strictExit && outcome.failures.some((f) => f.code !== 'ERR_SOURCE_UNAVAILABLE');
        options.setExit(bad ? 1 : 0);
        return;
      }
      options.setExit(await agent.run(handlers.signal));
    } finally {
      handlers.dispose();
    }
  });
  return cmd;
}
