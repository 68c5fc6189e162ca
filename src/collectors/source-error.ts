import { SourceUnavailableError } from '../errors.js';
import { HttpError } from '../http/http-error.js';
import { KeystoneError } from '../keystone/keystone-error.js';
import { UntrustedPathError, type PathTrust } from '../util/trust.js';

// The one mapping from a failed request (HttpError from the HTTP client, KeystoneError from a login) to the source
// error a collector throws: the source is unavailable this poll and its last good data is kept. The code says what
// kind of failure it was (ERR_HTTP_TOO_LARGE for a body over the cap, ERR_HTTP for the rest), the status that
// caused it (a refused login, a proxy's 407) is carried over, and the request error stays reachable as the cause.

export interface HttpFailureWording {
  /**
   * The message from the failure's reason (an HttpError's text without its URL, a KeystoneError's message), for a
   * collector that names the endpoint its own way. Without it the request error's own message is used.
   */
  readonly message?: (reason: string) => string;
}

/** The source error for a failed request, or undefined when `err` is not one (a bug, or a shutdown): rethrow that. */
export function sourceErrorFromHttp(
  collector: string,
  err: unknown,
  wording: HttpFailureWording = {},
): SourceUnavailableError | undefined {
  if (err instanceof HttpError) {
    const message = wording.message ? wording.message(err.reason) : err.message;
    const status = err.statusCode !== undefined ? { statusCode: err.statusCode } : {};
    return new SourceUnavailableError(collector, message, {
      code: err.code === 'ERR_HTTP_TOO_LARGE' ? 'ERR_HTTP_TOO_LARGE' : 'ERR_HTTP',
      cause: err,
      ...status,
    });
  }
  if (err instanceof KeystoneError) {
    const status = err.statusCode !== undefined ? { statusCode: err.statusCode } : {};
    return new SourceUnavailableError(collector, wording.message ? wording.message(err.message) : err.message, {
      code: 'ERR_HTTP',
      cause: err,
      ...status,
    });
  }
  return undefined;
}

/**
 * The source error for data the trust rule refuses (util/trust.ts): the whole source is unavailable, its last good
 * data kept, with the code `status` and `doctor` show for it.
 */
export function untrustedSource(
  collector: string,
  file: string,
  verdict: Extract<PathTrust, { kind: 'untrusted' }>,
): SourceUnavailableError {
  const err = new UntrustedPathError(file, verdict.at, verdict.problem);
  return new SourceUnavailableError(collector, err.message, {
    code: 'ERR_SOURCE_INSECURE',
    cause: err,
  });
}
