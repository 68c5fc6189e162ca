import { AgentError } from '../errors.js';

// Errors of the heat-cfntools commands (cfn-init, cfn-get-metadata, cfn-hup). Each names the file, endpoint or
// resource and what to change; the commands exit 1 for all of them, as heat-cfntools does for its failures.

/** A credential file that cannot be read or lacks a key, or half a pair of keys on the command line. */
export class CfnCredentialsError extends AgentError {
  override name = 'CfnCredentialsError';
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_CFN_CREDENTIALS', message, options);
  }
}

/** A resource's metadata could not be fetched from heat-api-cfn, read from a local copy, or parsed. */
export class CfnMetadataError extends AgentError {
  override name = 'CfnMetadataError';
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_CFN_METADATA', message, options);
  }
}

/** No credentials were given and there is no local copy of the metadata either. */
export class NoMetadataError extends CfnMetadataError {
  override name = 'NoMetadataError';
}

/** cfn-hup's configuration (cfn-hup.conf, hooks.conf, hooks.d/*.conf) cannot be used. */
export class HupConfigError extends AgentError {
  override name = 'HupConfigError';
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_CFN_HUP_CONFIG', message, options);
  }
}
