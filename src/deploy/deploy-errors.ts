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

/** Another process (a `deploy` command or the daemon) is running deployments with the same state directory. */
export class DeployLockedError extends AgentError {
  override name = 'DeployLockedError';
  constructor(message: string, readonly holderPid: number) {
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
  return new DeploymentStateError(`cannot ${action} ${file}: ${code}; check the disk and the directory's permissions`, { cause: err });
}
