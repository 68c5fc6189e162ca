import { AgentError } from '../errors.js';

// Failures of a refresh run. Each carries the process exit status os-refresh-config would have used, so the
// compatibility command and callers of runRefresh() agree on it.

/** A phase script (or in-process step, or environment.d file) failed, timed out or was interrupted. */
export class PhaseFailedError extends AgentError {
  override name = 'PhaseFailedError';
  /** Upstream flattens every phase failure to 1. */
  readonly exitCode = 1;
  constructor(
    message: string,
    readonly details: {
      readonly phase: string;
      readonly script?: string;
      readonly scriptExitCode?: number | null;
      readonly scriptSignal?: string | null;
      readonly timedOut?: boolean;
      readonly aborted?: boolean;
    },
    /** `code`: ERR_UNTRUSTED_PATH when the phase was refused by the trust rule before anything of it ran. */
    options?: { cause?: unknown; code?: 'ERR_UNTRUSTED_PATH' },
  ) {
    super(options?.code ?? 'ERR_PHASE_FAILED', message, options);
  }
}

/** Linux EAGAIN: upstream exits with the errno of the failed flock(). */
export const LOCKED_EXIT_CODE = 11;

/** Another refresh holds the lock file. */
export class RefreshLockedError extends AgentError {
  override name = 'RefreshLockedError';
  readonly exitCode = LOCKED_EXIT_CODE;
  constructor(readonly lockfile: string) {
    super(
      'ERR_LOCKED',
      `could not lock ${lockfile}: another os-refresh-config run holds it; try again when it has finished`,
    );
  }
}

/** The lock file could not be opened or locked at all (missing flock(1), unwritable directory). */
export class RefreshLockError extends AgentError {
  override name = 'RefreshLockError';
  readonly exitCode = 1;
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_LOCKED', message, options);
  }
}
