import type { Command } from 'commander';
import { credentialsFrom, type CfnCredentials } from '../cfntools/credentials.js';
import type { PathMapper } from '../util/rooted-path.js';

// --access-key, --secret-key, --region, --credential-file and --url, as heat-cfntools' cfn-init and cfn-get-metadata
// both take them: the keys that sign the request to heat-api-cfn, and where it is. Defined once here, so that the two
// commands read and document them alike.

export interface CfnCredentialFlags {
  accessKey?: string;
  secretKey?: string;
  region?: string;
  credentialFile?: string;
  url?: string;
}

export function addCfnCredentialFlags(cmd: Command): Command {
  return cmd
    .option('--access-key <key>', 'A Keystone access key')
    .option('--secret-key <key>', 'A Keystone secret key')
    .option('--region <region>', 'Openstack region (accepted; not needed, as with heat-cfntools)')
    .option('--credential-file <file>', 'a file of AWSAccessKeyId= and AWSSecretKey= lines (wins over the keys)')
    .option('-u, --url <url>', "heat-api-cfn's URL (default: Heat's cfn-metadata-server, cfn-boto-cfg, [cfn])");
}

/** The keys the flags give (the credential file, under --root, wins), or none. */
export function credentialsOf(flags: CfnCredentialFlags, paths: PathMapper): Promise<CfnCredentials | undefined> {
  return credentialsFrom({
    accessKey: flags.accessKey,
    secretKey: flags.secretKey,
    credentialFile: flags.credentialFile ? paths.map(flags.credentialFile) : undefined,
    shownFile: flags.credentialFile,
  });
}
