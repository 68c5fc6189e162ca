// Every failure the agent reports is one of these classes. `code` is stable (scripts and tests match on it) and the
// message says what failed and what the operator can do. Messages never contain secrets: callers pass URLs through
// redactUrl() and never interpolate credential values, and every message is scrubbed when the error is made (by the
// scrubber the logger installs: the secrets registered so far, signed URLs, user-info, tokens; docs/security.md), so
// a value that slips in (a URL quoted from a tool's output, a header) never reaches a terminal, a record or a log.

let scrubMessage: (message: string) => string = (message) => message;

/** Install the scrubber of every AgentError's message (src/log/redact.ts does, when it is loaded). */
export function setMessageScrubber(scrub: (message: string) => string): void {
  scrubMessage = scrub;
}

export type ErrorCode =
  | 'ERR_CONFIG_INVALID'
  | 'ERR_CONFIG_UNREADABLE'
  | 'ERR_SOURCE_NOT_CONFIGURED'
  | 'ERR_SOURCE_UNAVAILABLE'
  | 'ERR_SOURCE_INSECURE'
  | 'ERR_SOURCE_INVALID_DATA'
  | 'ERR_CACHE_WRITE'
  | 'ERR_CACHE_CORRUPT'
  | 'ERR_COMMAND_FAILED'
  | 'ERR_UNSAFE_NAME'
  | 'ERR_RESERVED_NAME'
  | 'ERR_UNSAFE_PATH'
  | 'ERR_UNTRUSTED_PATH'
  | 'ERR_HTTP'
  | 'ERR_HTTP_TOO_LARGE'
  | 'ERR_TEMPLATE'
  | 'ERR_CONTROL_FILE'
  | 'ERR_METADATA'
  | 'ERR_PHASE_FAILED'
  | 'ERR_LOCKED'
  | 'ERR_HOOK'
  | 'ERR_SIGNAL'
  | 'ERR_DEPLOYMENT_STATE'
  | 'ERR_DEPLOYMENT_RECORD'
  | 'ERR_DEPLOYMENT_TRANSITION'
  | 'ERR_DEPLOYMENT_OPTION'
  | 'ERR_SIGNAL_TRANSITION'
  | 'ERR_DEPLOYMENT_UNKNOWN'
  | 'ERR_DEPLOYMENT_BUSY'
  | 'ERR_CFN_CREDENTIALS'
  | 'ERR_CFN_METADATA'
  | 'ERR_CFN_HUP_CONFIG'
  // Not thrown by the agent: a collector's unclassified failure (a log field), a built-in hook's refusal and a file
  // target it refuses (inside the hook's result).
  | 'ERR_SOURCE_UNEXPECTED'
  | 'ERR_HOOK_FAILURE'
  | 'ERR_TARGET_REFUSED';

/** Base class: anything the agent throws on purpose. */
export class AgentError extends Error {
  override name = 'AgentError';
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(scrubMessage(message), options);
    this.code = code;
  }
}

/** A collector has no configuration to work with (skipped quietly, as upstream does). */
export class SourceNotConfiguredError extends AgentError {
  override name = 'SourceNotConfiguredError';
  constructor(
    readonly collector: string,
    message: string,
  ) {
    super('ERR_SOURCE_NOT_CONFIGURED', message);
  }
}

/** A configured collector could not produce data this cycle; its last good data is kept. */
export class SourceUnavailableError extends AgentError {
  override name = 'SourceUnavailableError';
  /** The HTTP status the source (or its Keystone, or a proxy) answered, when an answer made it unavailable. */
  readonly statusCode: number | undefined;
  constructor(
    readonly collector: string,
    message: string,
    options?: {
      cause?: unknown;
      code?:
        | 'ERR_SOURCE_UNAVAILABLE'
        | 'ERR_SOURCE_INSECURE'
        | 'ERR_SOURCE_INVALID_DATA'
        | 'ERR_HTTP'
        | 'ERR_HTTP_TOO_LARGE';
      statusCode?: number;
    },
  ) {
    super(options?.code ?? 'ERR_SOURCE_UNAVAILABLE', message, options);
    this.statusCode = options?.statusCode;
  }
}

/** Writing the metadata cache failed (disk full, read-only, permissions). */
export class CacheWriteError extends AgentError {
  override name = 'CacheWriteError';
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_CACHE_WRITE', message, options);
  }
}

/** The configured command exited non-zero or was killed; nothing was committed. */
export class CommandFailedError extends AgentError {
  override name = 'CommandFailedError';
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super('ERR_COMMAND_FAILED', message);
  }
}

/** A name that would be used as a file name (cache key, hook group, deployment id) is unsafe. */
export class UnsafeNameError extends AgentError {
  override name = 'UnsafeNameError';
  constructor(message: string) {
    super('ERR_UNSAFE_NAME', message);
  }
}

/**
 * A file or deployment would take a cache key the agent keeps for itself: os_config_files (the cache's file list) or
 * a collector's name (that source's document). The entry is left out; the rest of the source is used.
 */
export class ReservedNameError extends AgentError {
  override name = 'ReservedNameError';
  constructor(
    readonly collector: string,
    message: string,
  ) {
    super('ERR_RESERVED_NAME', message);
  }
}

/** A path escapes the directory it must stay in. */
export class UnsafePathError extends AgentError {
  override name = 'UnsafePathError';
  constructor(message: string) {
    super('ERR_UNSAFE_PATH', message);
  }
}

/** Helper for code that must report an unknown thrown value. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
