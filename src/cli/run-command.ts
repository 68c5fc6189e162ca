import type { Command } from 'commander';
import { createLogger } from '../log/logger.js';
import { claimDaemon, daemonPresenceFile } from '../status/daemon-presence.js';
import { buildAgent } from './agent-factory.js';
import type { CommandContext } from './command-context.js';
import { addCommonFlags, commonFlagsOf, configureLogger, configSources, COMMON_HEADING } from './common-flags.js';
import { addConfigOptions, ALL_OPTIONS, readConfigOverrides } from './config-options.js';
import { installSignalHandlers } from './process-signals.js';

// `os-config-agent run`: the daemon systemd starts. Logs go to stdout: JSON lines with their syslog priority for
// journald, text on a terminal ([agent] log_format).

/** The configuration options `run` and `collect` show with their own flags: the ones that shape the loop. */
export const LOOP_OPTIONS = [
  'DEFAULT.one_time',
  'DEFAULT.force',
  'DEFAULT.polling_interval',
  'DEFAULT.min_polling_interval',
  'DEFAULT.splay',
];

export function defineRunCommand(cmd: Command, ctx: CommandContext): Command {
  const bindings = addConfigOptions(cmd, { scope: ALL_OPTIONS, own: LOOP_OPTIONS, helpAll: ctx.helpAll });
  addCommonFlags(cmd, COMMON_HEADING);
  cmd.action(async () => {
    const flags = commonFlagsOf(cmd);
    const log = createLogger({ level: flags.debug ? 'debug' : (flags.logLevel ?? 'info'), destination: 'stdout' });
    const agent = await buildAgent(configSources(flags, readConfigOverrides(cmd, bindings)), log, 'run', true);
    configureLogger(log, flags, agent.loaded.config.agent);
    // One daemon per root: a second one would run every deployment and send every signal a second time.
    const withdraw = agent.loaded.config.DEFAULT.one_time
      ? undefined
      : await claimDaemon(daemonPresenceFile(agent.loaded.config));
    const handlers = installSignalHandlers(log, () => agent.requestReload());
    log.info(
      {
        root: agent.loaded.paths.root,
        collectors: agent.loaded.config.DEFAULT.collectors,
        oneTime: agent.loaded.config.DEFAULT.one_time,
      },
      'agent starting',
    );
    try {
      ctx.setExit(await agent.run(handlers.signal));
    } finally {
      handlers.dispose();
      await withdraw?.();
    }
  });
  return cmd;
}
