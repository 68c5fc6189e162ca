import type { Command } from 'commander';
import { NoMetadataError } from '../cfntools/cfn-errors.js';
import { cfnLog } from '../cfntools/cfn-log.js';
import { CFN_LOG_FILES } from '../cfntools/cfn-paths.js';
import { displayMetadata } from '../cfntools/get-metadata.js';
import { retrieveMetadata } from '../cfntools/retrieve.js';
import { errorMessage } from '../errors.js';
import { addCfnCredentialFlags, credentialsOf, type CfnCredentialFlags } from './cfn-credential-flags.js';
import { cfnFlagsOf, cfnRuntime, type CfnRuntimeFlags } from './cfn-runtime.js';
import { addRootConfigFlags } from './root-flags.js';

// `cfn-get-metadata -s STACK -r RESOURCE [-k KEY]` (and `os-config-agent cfn-get-metadata`): prints a resource's
// metadata, or the value at a key path, as heat-cfntools' does (src/cfntools/get-metadata.ts). Exit 1 when the
// metadata cannot be had; without keys and without a local copy it prints nothing and exits 0, as heat-cfntools did
// (the reason on stderr). Unlike heat-cfntools it leaves last_metadata alone: reading must not hide a change from
// cfn-hup.

interface GetMetadataFlags extends CfnRuntimeFlags, CfnCredentialFlags {
  stack?: string;
  resource?: string;
  key?: string;
}

export function defineCfnGetMetadataCommand(
  cmd: Command,
  setExit: (code: number) => void,
  name = 'cfn-get-metadata',
): Command {
  cmd
    .option('-s, --stack <name>', 'A Heat stack name (required)')
    .option('-r, --resource <id>', 'A Heat logical resource ID (required)');
  addCfnCredentialFlags(cmd).option(
    '-k, --key <path>',
    "print only the value at this key path (keys joined by '.'; quote a key with a dot)",
  );
  // After its own flags: the help lists the command's own first.
  addRootConfigFlags(cmd);
  cmd.action(async () => {
    const flags = cfnFlagsOf<GetMetadataFlags>(cmd);
    // Required, as argparse says it; checked here so that an unknown flag is reported first (commander's order).
    for (const [value, flag] of [
      [flags.stack, '-s, --stack <name>'],
      [flags.resource, '-r, --resource <id>'],
    ] as const)
      if (value === undefined) cmd.error(`error: required option '${flag}' not specified`, { exitCode: 2 });
    // heat-cfntools' own checks and words, on stdout.
    if (!flags.stack) return done(setExit, 1, 'The Stack name must not be empty.');
    if (!flags.resource) return done(setExit, 1, 'The Resource ID must not be empty');
    const runtime = await cfnRuntime(flags);
    const { paths, config } = runtime.loaded;
    const log = cfnLog(name, { file: paths.map(CFN_LOG_FILES['cfn-get-metadata']) });
    try {
      const credentials = await credentialsOf(flags, paths);
      const { metadata, from } = await retrieveMetadata({
        stack: flags.stack,
        resource: flags.resource,
        credentials,
        endpoint: runtime.endpoint(flags.url),
        http: runtime.http,
        paths,
        log,
        timeoutSeconds: config.cfn.timeout,
        caFile: config.cfn.ca_certificate,
      });
      log.info('metadata read', { from });
      process.stdout.write(displayMetadata(metadata, flags.key) ?? '');
      setExit(0);
    } catch (err) {
      log.error('cfn-get-metadata failed', { reason: errorMessage(err) });
      setExit(err instanceof NoMetadataError ? 0 : 1);
    }
  });
  return cmd;
}

function done(setExit: (code: number) => void, code: number, line: string): void {
  process.stdout.write(`${line}\n`);
  setExit(code);
}
