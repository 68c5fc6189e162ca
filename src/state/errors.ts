import { AgentError } from '../errors.js';

// Errors of the deployment runner. A failing hook is not an error of the agent (it is signalled to Heat); these are
// for what the operator has to fix on the instance: the state directory, the lock, the input.

/** Deployment state (records, deployed/ files, the heat-config file) could not be read or written. */
export class DeploymentStateError extends AgentError {
  override name = 'DeploymentStateError';
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_DEPLOYMENT_STATE', message, options);
  }
}

/**
 * A deployment record that cannot be used: not JSON, a field of the wrong type, or written by another release of the
 * agent. The deployment is held (not run, not signalled, not removed) until the operator clears it; the other
 * deployments go on. docs/state-machine.md: recovery.
 */
export class DeploymentRecordError extends AgentError {
  override name = 'DeploymentRecordError';
  constructor(
    readonly deploymentId: string,
    readonly file: string,
    readonly problem: string,
  ) {
    super(
      'ERR_DEPLOYMENT_RECORD',
      `the record of deployment ${deploymentId} (${file}) cannot be used: ${problem}; the deployment is held (not run, not signalled) until it is cleared: ` +
        `\`os-config-agent deploy --forget ${deploymentId}\` makes the next pass run it as new, or deleting only that file makes the next pass adopt it without running it when its deployed file exists (docs/state-machine.md)`,
    );
  }
}

/**
 * An event the state machine (machine.ts) does not allow from the record's state, or a move of its signal that does
 * not go with the event (signal-machine.ts): a defect of the agent, not of the input.
 */
export class DeploymentTransitionError extends AgentError {
  override name = 'DeploymentTransitionError';
  constructor(
    readonly deploymentId: string,
    readonly from: string | undefined,
    readonly event: string,
    readonly signal?: { readonly from: string; readonly to?: string },
  ) {
    const signalMove =
      signal === undefined
        ? ''
        : signal.to === undefined
          ? ` with its signal ${signal.from}`
          : ` with its signal going from ${signal.from} to ${signal.to}`;
    super(
      'ERR_DEPLOYMENT_TRANSITION',
      `deployment ${deploymentId} cannot take the event ${event} in state ${from ?? '(new)'}${signalMove}: the state machine has no such transition; the record was not changed (this is a defect of the agent: please report it with the log)`,
    );
  }
}

/** A move of a queued signal the signal table (signal-machine.ts) does not have: a defect of the agent. */
export class SignalTransitionError extends AgentError {
  override name = 'SignalTransitionError';
  constructor(
    readonly signalId: string,
    readonly from: string,
    readonly event: string,
  ) {
    super(
      'ERR_SIGNAL_TRANSITION',
      `signal ${signalId} cannot take the event ${event} in state ${from}: the signal state machine has no such transition; nothing was written (this is a defect of the agent: please report it with the log)`,
    );
  }
}

/** Another process (a `deploy` command or the daemon) is running deployments with the same state directory. */
export class DeployLockedError extends AgentError {
  override name = 'DeployLockedError';
  constructor(
    message: string,
    /** The holder, when the lock file names a process that is running. */
    readonly holderPid: number | undefined,
  ) {
    super('ERR_LOCKED', message);
  }
}

/** `deploy --rerun/--forget` named a deployment the agent does not know (or one it cannot run again). */
export class UnknownDeploymentError extends AgentError {
  override name = 'UnknownDeploymentError';
  constructor(message: string) {
    super('ERR_DEPLOYMENT_UNKNOWN', message);
  }
}

/** `deploy --rerun/--forget` named a deployment whose hook is running now. */
export class DeploymentBusyError extends AgentError {
  override name = 'DeploymentBusyError';
  constructor(message: string) {
    super('ERR_DEPLOYMENT_BUSY', message);
  }
}

/** The deployments could not be read: no cached metadata, or a heat-config file that is missing or not JSON. */
export class DeploymentsInputError extends AgentError {
  override name = 'DeploymentsInputError';
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_METADATA', message, options);
  }
}

/** Wraps a filesystem failure into a DeploymentStateError naming the file and the fix. */
export function stateError(action: string, file: string, err: unknown): DeploymentStateError {
  const code = (err as NodeJS.ErrnoException).code ?? String(err);
  return new DeploymentStateError(`cannot ${action} ${file}: ${code}; check the disk and the directory's permissions`, {
    cause: err,
  });
}
