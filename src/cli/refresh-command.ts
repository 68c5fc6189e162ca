import { Option, InvalidArgumentError, type Command } from 'commander';
import { loadConfig, type CliOverrides, type LoadedConfig } from '../config/load.js';
import { logProblems } from '../config/log-problems.js';
import { AgentError, errorMessage } from '../errors.js';
import type { LogLevel } from '../log/log-level.js';
import { createLogger, type Logger } from '../log/logger.js';
import { resolveBaseDir } from '../refresh/base-dir.js';
import { PHASES, runRefresh } from '../refresh/run-refresh.js';
import type { CommandContext } from './command-context.js';
import {
  addCommonFlags,
  commonFlagsOf,
  configureLogger,
  configSources,
  COMMON_HEADING,
  type CommonFlags,
} from './common-flags.js';
import { addConfigOptions, readConfigOverrides } from './config-options.js';
import { installSignalHandlers } from './process-signals.js';
import { printData } from './quiet-epipe.js';

// `os-config-agent refresh` and the compatibility command `os-refresh-config`: run the phase directories
// (pre-configure, configure, post-configure, migration) under the base directory, as os-refresh-config does, with
// its lock file, --timeout, error.d and exit statuses (0 ok, 1 a phase failed, 2 usage, 11 lock held elsewhere).
// JSON logs go to stdout; the scripts' own output goes to stderr.

interface RefreshFlags extends CommonFlags {
  printBase?: boolean;
  printPhases?: boolean;
}

interface CompatFlags extends RefreshFlags {
  lockfile?: string;
  timeout?: number;
}

/** Upstream's --log-level choices (argparse rejects anything else with exit 2). */
const COMPAT_LEVELS: Record<string, LogLevel> = {
  ERROR: 'error',
  WARN: 'warn',
  CRITICAL: 'fatal',
  INFO: 'info',
  DEBUG: 'debug',
};

function processEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  return env;
}

function parseTimeout(value: string): number {
  if (!/^\s*\+?\d+\s*$/.test(value))
    throw new InvalidArgumentError('expected a whole number of seconds (0: no limit).');
  return Number.parseInt(value, 10);
}

async function execute(
  loaded: LoadedConfig,
  flags: RefreshFlags,
  log: Logger,
  setExit: (code: number) => void,
): Promise<void> {
  const env = processEnv();
  const baseDir = await resolveBaseDir({ configured: loaded.config.refresh.base_dir, env, paths: loaded.paths, log });
  if (flags.printBase) {
    printData(`${baseDir}\n`);
    setExit(0);
    return;
  }
  if (flags.printPhases) {
    printData(`${PHASES.join('\t')}\n`);
    setExit(0);
    return;
  }
  const handlers = installSignalHandlers(log);
  try {
    await runRefresh({
      baseDir,
      lockfile: loaded.config.refresh.lockfile,
      timeoutSeconds: loaded.config.refresh.timeout,
      env,
      log,
      signal: handlers.signal,
    });
    setExit(0);
  } catch (err) {
    if (!(err instanceof AgentError)) throw err;
    const exitCode = (err as { exitCode?: unknown }).exitCode;
    log.error({ code: err.code, err: errorMessage(err) }, 'refresh failed');
    process.stderr.write(`os-refresh-config: ${err.message} [${err.code}]\n`);
    setExit(typeof exitCode === 'number' ? exitCode : 1);
  } finally {
    handlers.dispose();
  }
}

/** `os-config-agent refresh`. */
export function defineRefreshCommand(cmd: Command, ctx: CommandContext): Command {
  cmd.option('--print-base', 'print the phase base directory and exit');
  cmd.option('--print-phases', 'print the phase names (tab separated) and exit');
  addCommonFlags(cmd, COMMON_HEADING);
  const bindings = addConfigOptions(cmd, {
    scope: { agent: ['log_level', 'log_format'], refresh: 'all' },
    helpAll: ctx.helpAll,
  });
  cmd.action(async () => {
    const flags = commonFlagsOf<RefreshFlags>(cmd);
    const log = createLogger({ level: flags.debug ? 'debug' : (flags.logLevel ?? 'info'), destination: 'stdout' });
    const loaded = await loadConfig(configSources(flags, readConfigOverrides(cmd, bindings)));
    logProblems(loaded, log);
    configureLogger(log, flags, loaded.config.agent);
    await execute(loaded, flags, log, ctx.setExit);
  });
  return cmd;
}

/** The compatibility command `os-refresh-config`: upstream's flags, plus hidden --root and --config-file. */
export function defineRefreshCompatCommand(program: Command, ctx: CommandContext): Command {
  const setExit = ctx.setExit;
  program
    .description('Run the configuration phases (os-refresh-config compatible).')
    .option('--print-base', 'print the base directory and exit')
    .option('--print-phases', 'print the phases (tab separated) and exit')
    .addOption(new Option('--log-level <level>', 'log level').choices(Object.keys(COMPAT_LEVELS)).default('INFO'))
    .option(
      '--lockfile <file>',
      'lock file preventing concurrent runs (default: [refresh] lockfile, /var/run/os-refresh-config.lock)',
    )
    .option('--timeout <seconds>', 'seconds until the running scripts are killed and the run fails', parseTimeout)
    .addOption(new Option('--root <dir>', 'prefix every absolute path with DIR').hideHelp())
    .addOption(
      new Option('--config-file <file>', 'agent configuration file')
        .hideHelp()
        .argParser((v: string, prev: string[] | undefined) => [...(prev ?? []), v]),
    );
  program.action(async () => {
    const flags = program.opts<CompatFlags>();
    const level = COMPAT_LEVELS[flags.logLevel ?? 'INFO'] ?? 'info';
    const log = createLogger({ level, destination: 'stdout' });
    const cli: CliOverrides = { refresh: {} };
    if (flags.lockfile !== undefined) cli.refresh!.lockfile = flags.lockfile;
    if (flags.timeout !== undefined) cli.refresh!.timeout = flags.timeout;
    const loaded = await loadConfig(configSources({ root: flags.root, configFile: flags.configFile }, cli));
    logProblems(loaded, log);
    await execute(loaded, flags, log, setExit);
  });
  return program;
}
