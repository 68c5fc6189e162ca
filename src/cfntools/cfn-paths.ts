import type { PathMapper } from '../util/rooted-path.js';

// Where heat-cfntools keeps its files on an instance; every one of them mapped under --root. Heat's boot data writes
// the first three (cloud-init's part handler, from user-data), cfn-init and cfn-hup share the last metadata, and the
// cfn-hup configuration is the template's own (AWS::CloudFormation::Init files).

export const CFN_FILES = {
  /** The server's metadata at boot (also the heat_local collector's source). */
  initData: '/var/lib/heat-cfntools/cfn-init-data',
  /** heat-api-cfn's URL ("http://host:8000" from older Heat, "http://host:8000/v1/" from newer). */
  metadataServer: '/var/lib/heat-cfntools/cfn-metadata-server',
  /** boto's configuration: [Boto] cfn_region_endpoint names heat-api-cfn's host. */
  botoConfig: '/var/lib/heat-cfntools/cfn-boto-cfg',
  /** The last metadata read; with "_<resource>" appended, per resource. */
  lastMetadata: '/var/cache/heat-cfntools/last_metadata',
  hupConfig: '/etc/cfn/cfn-hup.conf',
  hooksConfig: '/etc/cfn/hooks.conf',
  hooksDir: '/etc/cfn/hooks.d',
} as const;

/** The log file of each command, as heat-cfntools names them. */
export const CFN_LOG_FILES = {
  'cfn-init': '/var/log/cfn-init.log',
  'cfn-get-metadata': '/var/log/cfn-get-metadata.log',
  'cfn-hup': '/var/log/cfn-hup.log',
} as const;

/** A heat-cfntools path as this process reaches it. */
export function cfnPath(paths: PathMapper, file: keyof typeof CFN_FILES): string {
  return paths.map(CFN_FILES[file]);
}
