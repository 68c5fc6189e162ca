import { AgentError } from '../errors.js';

// Kept apart from client.ts so that code which only checks for this error does not load got at start-up.

/** An HTTP request failed: transport error, timeout, or a body over the size cap. Carries the redacted URL only. */
export class HttpError extends AgentError {
  override name = 'HttpError';
  /** What went wrong, without the URL (for callers that name the endpoint their own way). */
  readonly reason: string;
  constructor(message: string, readonly redactedUrl: string, code: 'ERR_HTTP' | 'ERR_HTTP_TOO_LARGE' = 'ERR_HTTP', options?: { cause?: unknown; reason?: string }) {
    super(code, message, options);
    this.reason = options?.reason ?? message;
  }
}
