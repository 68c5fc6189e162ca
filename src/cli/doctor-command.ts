import { InvalidArgumentError, type Command } from 'commander';
import { loadConfig } from '../config/load.js';
import { exitCodeOf, formatReport } from '../doctor/check.js';
import { runDoctor } from '../doctor/run-doctor.js';
import { createLogger, parseLogLevel } from '../log/logger.js';
import { oneAttemptHttpClient } from './command-http.js';
import { addCommonFlags, chooseLogLevel, configSources, type CommonFlags } from './common-flags.js';
import { addConfigOptions, readConfigOverrides } from './config-options.js';
import { printData } from './quiet-epipe.js';

// `os-config-agent doctor [--json] [--timeout S]`: checks the configuration, every configured endpoint and its
// credentials (through the daemon's proxy settings), the clock, the hooks the cached deployments need and the disk
// where state is written. One line per check (or a versioned JSON report); exit 0 when nothing failed, 1 when a check
// failed, 2 for a usage error (docs/doctor.md). Changes nothing: no cache write, no queue pop, no token saved.

interface DoctorFlags extends CommonFlags {
  json?: boolean;
  timeout: number;
}

const DEFAULT_TIMEOUT_SECONDS = 5;
const MAX_TIMEOUT_SECONDS = 120;

function parseTimeout(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0 || n > MAX_TIMEOUT_SECONDS)
    throw new InvalidArgumentError(`must be a number of seconds above 0 and at most ${MAX_TIMEOUT_SECONDS}`);
  return n;
}

export function defineDoctorCommand(cmd: Command, setExit: (code: number) => void): Command {
  addCommonFlags(cmd);
  const bindings = addConfigOptions(cmd);
  cmd.option('--json', 'print the report as JSON (docs/doctor.md)');
  cmd.option('--timeout <seconds>', 'longest wait for each endpoint', parseTimeout, DEFAULT_TIMEOUT_SECONDS);
  cmd.action(async () => {
    const flags = cmd.opts<DoctorFlags>();
    if (flags.logLevel) parseLogLevel(flags.logLevel);
    // The report is the output; log lines (errors only unless asked for) go to stderr.
    const log = createLogger({ level: 'error', destination: 'stderr' });
    const loaded = await loadConfig(configSources(flags, readConfigOverrides(cmd, bindings)));
    if (flags.logLevel || flags.debug) log.level = chooseLogLevel(flags, loaded.config.agent.log_level);
    // No retries: one attempt per endpoint answers the question, and keeps the run bounded.
    const http = oneAttemptHttpClient(loaded, log);
    const report = await runDoctor({ loaded, http, log, env: process.env, timeoutMs: flags.timeout * 1000 });
    printData(flags.json ? `${JSON.stringify(report, null, 2)}\n` : formatReport(report));
    setExit(exitCodeOf(report));
  });
  return cmd;
}
