import { AgentError } from '../errors.js';

// Kept apart from client.ts so that code which only checks for this error does not load the client at start-up.

/**
 * An HTTP request failed: transport error, timeout, a body over the size cap, or a proxy that refused the agent's
 * credentials. Carries the redacted URL only, and the facts callers act on as fields (never to be parsed back out of
 * the message).
 */
export class HttpError extends AgentError {
  override name = 'HttpError';
  /** What went wrong, without the URL (for callers that name the endpoint their own way). */
  readonly reason: string;
  /** The HTTP status that made the request fail, when one did (407 from a proxy); undefined for transport failures. */
  readonly statusCode: number | undefined;
  constructor(
    message: string,
    readonly redactedUrl: string,
    code: 'ERR_HTTP' | 'ERR_HTTP_TOO_LARGE' = 'ERR_HTTP',
    options?: { cause?: unknown; reason?: string; statusCode?: number },
  ) {
    super(code, message, options);
    this.reason = options?.reason ?? message;
    this.statusCode = options?.statusCode;
  }
}
