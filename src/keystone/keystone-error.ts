import { AgentError } from '../errors.js';

/**
 * A Keystone login or version discovery failed; the message names the URL (redacted) and what to check. `statusCode`
 * is Keystone's answer when it gave one (a refused login, a failed discovery); a failure to reach it has none, and
 * carries the HttpError as its cause.
 */
export class KeystoneError extends AgentError {
  override name = 'KeystoneError';
  readonly statusCode: number | undefined;
  constructor(message: string, options?: { cause?: unknown; statusCode?: number }) {
    super('ERR_HTTP', message, options);
    this.statusCode = options?.statusCode;
  }
}
