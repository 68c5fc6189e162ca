import type { Command } from 'commander';
import { loadConfig } from '../config/load.js';
import { formatStatusTable, readStatus } from '../deploy/status.js';
import { createLogger, parseLogLevel } from '../log/logger.js';
import { addCommonFlags, chooseLogLevel, configSources, type CommonFlags } from './common-flags.js';
import { addConfigOptions, readConfigOverrides } from './config-options.js';
import { printData } from './quiet-epipe.js';

// `os-config-agent status [--json]`: every deployment the agent knows, with its state, times, exit code, signal
// state and last error. Reads the state directory only. Data on stdout, logs (warnings only by default) on stderr.

interface StatusFlags extends CommonFlags {
  json?: boolean;
}

export function defineStatusCommand(cmd: Command, setExit: (code: number) => void): Command {
  addCommonFlags(cmd);
  const bindings = addConfigOptions(cmd);
  cmd.option('--json', 'print a JSON list instead of a table');
  cmd.action(async () => {
    const flags = cmd.opts<StatusFlags>();
    if (flags.logLevel) parseLogLevel(flags.logLevel);
    const log = createLogger({ level: 'warn', destination: 'stderr' });
    const loaded = await loadConfig(configSources(flags, readConfigOverrides(cmd, bindings)));
    if (flags.logLevel || flags.debug) log.level = chooseLogLevel(flags, loaded.config.agent.log_level);
    const list = await readStatus(loaded.config, log);
    printData(flags.json ? `${JSON.stringify(list, null, 2)}\n` : formatStatusTable(list));
    setExit(0);
  });
  return cmd;
}
