import { AgentError } from '../errors.js';

/** A Keystone login or version discovery failed; the message names the URL (redacted) and what to check. */
export class KeystoneError extends AgentError {
  override name = 'KeystoneError';
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_HTTP', message, options);
  }
}
