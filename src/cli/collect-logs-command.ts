import path from 'node:path';
import type { Command } from 'commander';
import { loadConfig } from '../config/load.js';
import { createLogger } from '../log/logger.js';
import { oneAttemptHttpClient } from './command-http.js';
import type { CommandContext } from './command-context.js';
import {
  addCommonFlags,
  commonFlagsOf,
  configureLogger,
  configSources,
  COMMON_HEADING,
  type CommonFlags,
} from './common-flags.js';
import { addConfigOptions, ALL_OPTIONS, readConfigOverrides } from './config-options.js';
import { DEFAULT_TIMEOUT_SECONDS, parseTimeout } from './doctor-command.js';
import { existingRoot } from './root-check.js';
import { printData } from './quiet-epipe.js';

// `os-config-agent collect-logs [-t FILE]`: one tarball for a support request (as `cloud-init collect-logs`), with
// every secret removed (src/support/). Changes nothing on the machine but the tarball. The doctor it includes reaches
// every configured endpoint; --no-doctor leaves it out.

interface CollectLogsFlags extends CommonFlags {
  tarfile: string;
  doctor: boolean;
  doctorTimeout: number;
}

export const DEFAULT_TARFILE = 'os-config-agent-logs.tar.gz';
export function defineCollectLogsCommand(cmd: Command, ctx: CommandContext): Command {
  cmd.option('-t, --tarfile <file>', 'where to write the tarball', DEFAULT_TARFILE);
  cmd.option('--no-doctor', "leave out the doctor's report (it reaches every configured endpoint)");
  cmd.option(
    '--doctor-timeout <seconds>',
    'longest wait for each endpoint the doctor checks',
    parseTimeout,
    DEFAULT_TIMEOUT_SECONDS,
  );
  addCommonFlags(cmd, COMMON_HEADING);
  const bindings = addConfigOptions(cmd, { scope: ALL_OPTIONS, helpAll: ctx.helpAll });
  cmd.addHelpText(
    'after',
    [
      '',
      'The tarball holds status.json, doctor.json, journal.log, the configuration',
      '(config/), the deployment records and signal queue (state/) and versions.txt;',
      'passwords, keys, tokens and signatures are replaced by [REDACTED].',
    ].join('\n'),
  );
  cmd.action(async () => {
    const flags = commonFlagsOf<CollectLogsFlags>(cmd);
    const root = existingRoot(flags.root);
    if (!root.ok) cmd.error(root.message);
    const log = createLogger({ level: 'error', destination: 'stderr' });
    const loaded = await loadConfig(configSources(flags, readConfigOverrides(cmd, bindings)));
    if (flags.logLevel || flags.debug) configureLogger(log, flags, loaded.config.agent);
    const http = oneAttemptHttpClient(loaded, log);
    const { collectBundle } = await import('../support/collect-bundle.js');
    const { writeTarball } = await import('../support/write-tarball.js');
    const entries = await collectBundle({
      loaded,
      log,
      http,
      env: process.env,
      doctorTimeoutSeconds: flags.doctor ? flags.doctorTimeout : 0,
    });
    const file = path.resolve(flags.tarfile);
    const top = path.basename(file).replace(/\.tar\.gz$|\.tgz$/, '') || 'os-config-agent-logs';
    await writeTarball(file, top, entries);
    printData(`${file}\n`);
    process.stderr.write(
      `collect-logs: wrote ${file} (${entries.length} files); secrets are replaced by [REDACTED], but read it before you share it\n`,
    );
    ctx.setExit(0);
  });
  return cmd;
}
