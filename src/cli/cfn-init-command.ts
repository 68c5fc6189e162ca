import type { Command } from 'commander';
import { cfnInit } from '../cfntools/cfn-init.js';
import { cfnLog } from '../cfntools/cfn-log.js';
import { CFN_LOG_FILES } from '../cfntools/cfn-paths.js';
import { toolContext } from '../cfntools/cfn-context.js';
import { errorMessage } from '../errors.js';
import { addCfnCredentialFlags, credentialsOf, type CfnCredentialFlags } from './cfn-credential-flags.js';
import { cfnFlagsOf, cfnRuntime, type CfnRuntimeFlags } from './cfn-runtime.js';
import { addRootConfigFlags } from './root-flags.js';

// `cfn-init` (and `os-config-agent cfn-init`): heat-cfntools' cfn-init, with its flags. Reads the resource's metadata
// (heat-api-cfn with keys, else the local copy), saves it for cfn-hup, and applies its AWS::CloudFormation::Init
// section with the agent's interpreter (src/cfntools/cfn-init.ts). Logs to /var/log/cfn-init.log; warnings and
// errors also to stderr. Exit 0 when everything was applied, 1 when anything failed (heat-cfntools' codes), 2 for a
// usage error.

interface CfnInitFlags extends CfnRuntimeFlags, CfnCredentialFlags {
  stack?: string;
  resource?: string;
  configsets?: string;
  verbose?: boolean;
}

const DEFAULT_FETCH_TIMEOUT_SECONDS = 60;

export function defineCfnInitCommand(cmd: Command, setExit: (code: number) => void, name = 'cfn-init'): Command {
  cmd.option('-s, --stack <name>', 'A Heat stack name').option('-r, --resource <id>', 'A Heat logical resource ID');
  addCfnCredentialFlags(cmd)
    .option('-c, --configsets <list>', 'An optional list of configSets (default: default)')
    .option('-v, --verbose', 'every log line on stderr too, not only warnings and errors');
  // After its own flags: the help lists the command's own first.
  addRootConfigFlags(cmd);
  cmd.action(async () => {
    const flags = cfnFlagsOf<CfnInitFlags>(cmd);
    const runtime = await cfnRuntime(flags);
    const { paths, config } = runtime.loaded;
    const log = cfnLog(name, { file: paths.map(CFN_LOG_FILES['cfn-init']), verbose: flags.verbose === true });
    const env: NodeJS.ProcessEnv = { ...process.env, ...(flags.root ? { OS_CONFIG_AGENT_ROOT: paths.root } : {}) };
    const fetch = Number(env.HEAT_CFN_INIT_FETCH_TIMEOUT);
    try {
      const credentials = await credentialsOf(flags, paths);
      await cfnInit({
        stack: flags.stack,
        resource: flags.resource,
        configsets: flags.configsets,
        credentials,
        endpoint: runtime.endpoint(flags.url),
        http: runtime.http,
        paths,
        ctx: toolContext(env, log),
        timeoutSeconds: config.cfn.timeout,
        fetchTimeoutSeconds: Number.isFinite(fetch) && fetch > 0 ? fetch : DEFAULT_FETCH_TIMEOUT_SECONDS,
        caFile: config.cfn.ca_certificate,
      });
      setExit(0);
    } catch (err) {
      log.error('cfn-init failed', { reason: errorMessage(err) });
      setExit(1);
    }
  });
  return cmd;
}
