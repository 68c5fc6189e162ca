import type { Command } from 'commander';
import { createLogger, parseLogLevel } from '../log/logger.js';
import { claimDaemon, daemonPresenceFile } from '../status/daemon-presence.js';
import { buildAgent } from './agent-factory.js';
import { addCommonFlags, chooseLogLevel, configSources, type CommonFlags } from './common-flags.js';
import { addConfigOptions, readConfigOverrides } from './config-options.js';
import { installSignalHandlers } from './process-signals.js';

// `os-config-agent run`: the daemon systemd starts. Logs JSON lines on stdout for journald.
export function defineRunCommand(cmd: Command, setExit: (code: number) => void): Command {
  addCommonFlags(cmd);
  const bindings = addConfigOptions(cmd);
  cmd.action(async () => {
    const flags = cmd.opts<CommonFlags>();
    if (flags.logLevel) parseLogLevel(flags.logLevel);
    const log = createLogger({ level: flags.debug ? 'debug' : 'info', destination: 'stdout' });
    const agent = await buildAgent(configSources(flags, readConfigOverrides(cmd, bindings)), log, 'run', true);
    log.level = chooseLogLevel(flags, agent.loaded.config.agent.log_level);
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
      setExit(await agent.run(handlers.signal));
    } finally {
      handlers.dispose();
      await withdraw?.();
    }
  });
  return cmd;
}
