import { Option, type Command } from 'commander';
import type { CliOverrides, ConfigSources } from '../config/load.js';
import { parseLogLevel, type LogLevel } from '../log/logger.js';

// The flags every agent command shares (root prefix, configuration files, log level, and oslo.log's flags that are
// accepted and ignored), in a module of their own so a command loads them without the code of the others.

export interface CommonFlags {
  root?: string;
  configFile?: string[];
  configDir?: string[];
  logLevel?: string;
  debug?: boolean;
}

export function addCommonFlags(cmd: Command): Command {
  return (
    cmd
      .option(
        '--root <dir>',
        'prefix every absolute path the agent reads or writes with DIR (tests, demos, image builds)',
      )
      .option(
        '--config-file <file>',
        'configuration file (repeat for more; default ~/os-collect-config.conf or /etc/os-collect-config.conf)',
        collect,
      )
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
      .addOption(hiddenFlag('--verbose'))
  );
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
