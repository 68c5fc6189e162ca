import { InvalidArgumentError, Option, type Command } from 'commander';
import type { CliOverrides, ConfigSources } from '../config/load.js';
import type { AgentConfig } from '../config/options.js';
import { parseLogLevel, type LogLevel } from '../log/log-level.js';
import { setLogFormat, type LogFormat, type Logger } from '../log/logger.js';

// The flags every agent command shares (root prefix, configuration files, log level, and oslo.log's flags that are
// accepted and ignored), in a module of their own so a command loads them without the code of the others. They are
// given before the subcommand (`os-config-agent --root /mnt status`) or after it; after it wins.

export interface CommonFlags {
  root?: string;
  configFile?: string[];
  configDir?: string[];
  logLevel?: LogLevel;
  debug?: boolean;
}

export { COMMON_HEADING } from './command-context.js';
import { collectRepeated } from './root-flags.js';

/** The common flags, under their own heading when `heading` is given (a subcommand's help lists its own first). */
export function addCommonFlags(cmd: Command, heading?: string): Command {
  const add = (option: Option) => cmd.addOption(heading ? option.helpGroup(heading) : option);
  add(
    new Option(
      '--root <dir>',
      'prefix every absolute path the agent reads or writes with DIR (tests, demos, image builds)',
    ),
  );
  add(
    new Option(
      '--config-file <file>',
      'configuration file (repeat for more; default ~/os-collect-config.conf or /etc/os-collect-config.conf)',
    ).argParser(collectRepeated),
  );
  add(
    new Option(
      '--config-dir <dir>',
      'directory of *.conf files read after the config files (repeat for more)',
    ).argParser(collectRepeated),
  );
  add(new Option('--log-level <level>', 'fatal, error, warn, info, debug or trace').argParser(logLevelArgument));
  add(new Option('-d, --debug', 'same as --log-level debug'));
  // Accepted for compatibility with oslo.log; upstream never applied them (its logging was never set up).
  for (const flags of [
    '--log-file <file>',
    '--log-dir <dir>',
    '--log-config-append <file>',
    '--log-date-format <format>',
    '--syslog-log-facility <facility>',
    '--use-syslog',
    '--use-journal',
    '--use-json',
    '--watch-log-file',
    '--verbose',
  ])
    cmd.addOption(new Option(flags).hideHelp());
  return cmd;
}

/** A --log-level value; an unknown one is a usage error (exit 2). */
export function logLevelArgument(value: string): LogLevel {
  try {
    return parseLogLevel(value);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}

/**
 * The common flags of `cmd` with those given before the subcommand: a value after it wins, files and directories
 * given in both places add up (before first).
 */
export function commonFlagsOf<F extends CommonFlags>(cmd: Command): F {
  const own = cmd.opts<F>();
  const global = cmd.parent?.opts<CommonFlags>() ?? {};
  const merged: CommonFlags = {};
  for (const key of ['root', 'logLevel', 'debug'] as const) {
    const value = own[key] ?? global[key];
    if (value !== undefined) (merged as Record<string, unknown>)[key] = value;
  }
  for (const key of ['configFile', 'configDir'] as const) {
    const values = [...(global[key] ?? []), ...(own[key] ?? [])];
    if (values.length > 0) merged[key] = values;
  }
  return { ...own, ...merged };
}

export function configSources(flags: CommonFlags, cli: CliOverrides): ConfigSources {
  return { root: flags.root, configFiles: flags.configFile, configDirs: flags.configDir, cli };
}

export function chooseLogLevel(flags: CommonFlags, configured: string): LogLevel {
  if (flags.debug) return 'debug';
  if (flags.logLevel) return flags.logLevel;
  try {
    return parseLogLevel(configured);
  } catch {
    return 'info';
  }
}

/** The level (flags first, then the configuration) and format (`[agent] log_format`) of a command's logger. */
export function configureLogger(log: Logger, flags: CommonFlags, agent: AgentConfig['agent']): void {
  log.level = chooseLogLevel(flags, agent.log_level);
  setLogFormat(log, configuredLogFormat(agent));
}

/** `[agent] log_format`; undefined (unset) leaves each descriptor its default (text at a terminal). */
export function configuredLogFormat(agent: AgentConfig['agent']): LogFormat | undefined {
  return agent.log_format === 'json' || agent.log_format === 'text' ? agent.log_format : undefined;
}
