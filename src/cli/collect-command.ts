import { Command, Option } from 'commander';
import type { CliOverrides, ConfigSources } from '../config/load.js';
import { createLogger, parseLogLevel, type LogLevel } from '../log/logger.js';
import { mergePairs } from '../daemon/collect-all.js';
import { pythonJsonDumps } from '../util/python-json.js';
import { buildAgent } from './agent-factory.js';
import { addConfigOptions, readConfigOverrides } from './config-options.js';
import { installSignalHandlers } from './process-signals.js';

// `os-config-agent collect` and the compatibility command `os-collect-config`: upstream flags and behaviour.
// Without a command (or with --print) the merged metadata is printed as JSON and the process exits; with a command
// the loop runs (once with --one-time / --force).

export interface CommonFlags {
  root?: string;
  configFile?: string[];
  configDir?: string[];
  logLevel?: string;
  debug?: boolean;
}

export function addCommonFlags(cmd: Command): Command {
  return cmd
    .option('--root <dir>', 'prefix every absolute path the agent reads or writes with DIR (tests, demos, image builds)')
    .option('--config-file <file>', 'configuration file (repeat for more; default ~/os-collect-config.conf or /etc/os-collect-config.conf)', collect)
    .option('--config-dir <dir>', 'directory of *.conf files read after the config files (repeat for more)', collect)
    .option('--log-level <level>', 'fatal, error, warn, info, debug or trace')
    .option('-d, --debug', 'same as --log-level debug')
    // Accepted for compatibility with oslo.log; upstream never applied them (its logging was never set up).
    .addOption(hiddenValue('--log-file <file>'))
    .addOption(hiddenValue('--log-dir <dir>'))
    .addOption(hiddenValue('--log-config-append <file>'))
    .addOption(hiddenValue('--log-date-format <format>'))
    .addOption(hiddenValue('--syslog-log-facility <facility>'))
    .addOption(hiddenFlag('--use-syslog'))
    .addOption(hiddenFlag('--use-journal'))
    .addOption(hiddenFlag('--use-json'))
    .addOption(hiddenFlag('--watch-log-file'))
    .addOption(hiddenFlag('--verbose'));
}

function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

function hiddenValue(flags: string): Option {
  return new Option(flags).hideHelp();
}
function hiddenFlag(flags: string): Option {
  return new Option(flags).hideHelp();
}

export function configSources(flags: CommonFlags, cli: CliOverrides): ConfigSources {
  return { root: flags.root, configFiles: flags.configFile, configDirs: flags.configDir, cli };
}

export function chooseLogLevel(flags: CommonFlags, configured: string): LogLevel {
  if (flags.debug) return 'debug';
  try {
    return parseLogLevel(flags.logLevel ?? configured);
  } catch {
    return 'info';
  }
}

export function defineCollectCommand(cmd: Command, options: { strictExit: boolean; setExit: (code: number) => void }): Command {
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
      process.stdout.write(`${config.DEFAULT.cachedir}\n`);
      options.setExit(0);
      return;
    }
    const handlers = installSignalHandlers(bootLog, () => agent.requestReload());
    try {
      if (config.DEFAULT.print_only || !config.DEFAULT.command) {
        const outcome = await agent.collectOnly(handlers.signal);
        process.stdout.write(`${pythonJsonDumps(mergePairs(outcome.pairs), { indent: 1 })}\n`);
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
