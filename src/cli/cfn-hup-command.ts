import type { Command } from 'commander';
import { toolContext } from '../cfntools/cfn-context.js';
import { cfnLog } from '../cfntools/cfn-log.js';
import { CFN_FILES, CFN_LOG_FILES } from '../cfntools/cfn-paths.js';
import { loadHupConfig } from '../cfntools/hup-config.js';
import { runHupPass } from '../cfntools/hup-pass.js';
import { errorMessage } from '../errors.js';
import { cfnFlagsOf, cfnRuntime, type CfnRuntimeFlags } from './cfn-runtime.js';
import { addRootConfigFlags } from './root-flags.js';

// `cfn-hup [-f] [-c DIR] [-v]` (and `os-config-agent cfn-hup`): one check of the resources the hooks watch, firing
// the hooks whose triggers happened (src/cfntools/hup-pass.ts). As heat-cfntools' cfn-hup, it checks once and exits
// with or without -f (templates run it from cron); the agent's daemon does the same checks on its own every
// `interval` minutes once /etc/cfn/cfn-hup.conf exists. Exit 1 when the configuration cannot be used or a resource's
// metadata cannot be read; a hook action that fails is logged and does not change the exit status (heat-cfntools').

interface CfnHupFlags extends CfnRuntimeFlags {
  config: string;
  daemon?: boolean;
  verbose?: boolean;
}

/** Seconds a service's status or start may take. */
const SERVICE_TOOL_TIMEOUT_MS = 60_000;

export function defineCfnHupCommand(cmd: Command, setExit: (code: number) => void, name = 'cfn-hup'): Command {
  cmd
    .option('-c, --config <dir>', 'Hook Config Directory', CFN_FILES.hooksDir)
    .option('-f, --no-daemon', 'Do not run as a daemon (one check either way, as heat-cfntools)')
    .option('-v, --verbose', 'Verbose logging (every line on stderr too)');
  // After its own flags: the help lists the command's own first.
  addRootConfigFlags(cmd);
  cmd.action(async () => {
    const flags = cfnFlagsOf<CfnHupFlags>(cmd);
    const runtime = await cfnRuntime(flags);
    const { paths, config } = runtime.loaded;
    const log = cfnLog(name, { file: paths.map(CFN_LOG_FILES['cfn-hup']), verbose: flags.verbose === true });
    try {
      const hup = await loadHupConfig(paths, flags.config);
      const report = await runHupPass(hup, {
        paths,
        ctx: toolContext(process.env, log, { timeoutMs: SERVICE_TOOL_TIMEOUT_MS }),
        http: runtime.http,
        endpoint: runtime.endpoint(),
        timeoutSeconds: config.cfn.timeout,
        caFile: config.cfn.ca_certificate,
      });
      const failed = report.actions.filter((a) => !a.ok).length;
      log.info('cfn-hup check done', { actions: report.actions.length, failed, errors: report.errors.length });
      setExit(report.errors.length > 0 ? 1 : 0);
    } catch (err) {
      log.error('cfn-hup failed', { reason: errorMessage(err) });
      setExit(1);
    }
  });
  return cmd;
}
