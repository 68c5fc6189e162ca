import { InvalidArgumentError, type Command } from 'commander';
import { loadConfig } from '../config/load.js';
import { exitCodeOf, formatReport } from '../doctor/check.js';
import { runDoctor } from '../doctor/run-doctor.js';
import { createLogger } from '../log/logger.js';
import type { CommandContext } from './command-context.js';
import { oneAttemptHttpClient } from './command-http.js';
import {
  addCommonFlags,
  commonFlagsOf,
  configureLogger,
  configSources,
  COMMON_HEADING,
  type CommonFlags,
} from './common-flags.js';
import { addConfigOptions, ALL_OPTIONS, readConfigOverrides } from './config-options.js';
import { addExitStatus } from './help-notes.js';
import { printData } from './quiet-epipe.js';

// `os-config-agent doctor [--json] [--timeout S]`: checks the configuration, every configured endpoint and its
// credentials (through the daemon's proxy settings), the clock, the hooks the cached deployments need and the disk
// where state is written. One line per check (or a versioned JSON report); exit 0 when nothing failed, 1 when a check
// failed, 2 for a usage error (docs/doctor.md). Changes nothing: no cache write, no queue pop, no token saved.

interface DoctorFlags extends CommonFlags {
  json?: boolean;
  timeout: number;
}

/** The doctor's wait for each endpoint, also given by `collect-logs --doctor-timeout`. */
export const DEFAULT_TIMEOUT_SECONDS = 5;
const MAX_TIMEOUT_SECONDS = 120;

/** A --timeout of the doctor: seconds above 0, at most MAX_TIMEOUT_SECONDS. */
export function parseTimeout(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0 || n > MAX_TIMEOUT_SECONDS)
    throw new InvalidArgumentError(`must be a number of seconds above 0 and at most ${MAX_TIMEOUT_SECONDS}`);
  return n;
}

export function defineDoctorCommand(cmd: Command, ctx: CommandContext): Command {
  cmd.option('--json', 'print the report as JSON (doctor.md)');
  cmd.option('--timeout <seconds>', 'longest wait for each endpoint', parseTimeout, DEFAULT_TIMEOUT_SECONDS);
  addCommonFlags(cmd, COMMON_HEADING);
  // The doctor checks what the daemon would use: every option.
  const bindings = addConfigOptions(cmd, { scope: ALL_OPTIONS, helpAll: ctx.helpAll });
  addExitStatus(cmd, ['Exit status: 0 nothing failed, 1 a check failed, 2 a usage error. Details: doctor.md.']);
  cmd.action(async () => {
    const flags = commonFlagsOf<DoctorFlags>(cmd);
    // The report is the output; log lines (errors only unless asked for) go to stderr.
    const log = createLogger({ level: 'error', destination: 'stderr' });
    const loaded = await loadConfig(configSources(flags, readConfigOverrides(cmd, bindings)));
    if (flags.logLevel || flags.debug) configureLogger(log, flags, loaded.config.agent);
    // No retries: one attempt per endpoint answers the question, and keeps the run bounded.
    const http = oneAttemptHttpClient(loaded, log);
    const report = await runDoctor({ loaded, http, log, env: process.env, timeoutMs: flags.timeout * 1000 });
    printData(flags.json ? `${JSON.stringify(report, null, 2)}\n` : formatReport(report));
    ctx.setExit(exitCodeOf(report));
  });
  return cmd;
}
