import { AgentError } from '../errors.js';

// Errors of template rendering (os-apply-config). Each names the file and what to change; the CLI maps all of them to
// exit 1, as upstream maps its ConfigException.

/** A template could not be parsed or rendered, or strict mode found a missing key. */
export class TemplateError extends AgentError {
  override name = 'TemplateError';
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_TEMPLATE', message, options);
  }
}

/** A `.oac` control file is not valid YAML, has an unknown key or a bad value, or names an unknown user/group. */
export class ControlFileError extends AgentError {
  override name = 'ControlFileError';
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_CONTROL_FILE', message, options);
  }
}

/** Metadata could not be read or parsed, or a --key/--subhash/--type request cannot be satisfied. */
export class MetadataError extends AgentError {
  override name = 'MetadataError';
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_METADATA', message, options);
  }
}
