import { errorMessage } from '../../errors.js';
import { HookFailure, type BuiltinHook, type HookContext, type HookDeployment, type HookOutcome } from '../contract.js';
import { failure } from '../hook-result.js';

export interface HookExecution {
  readonly outcome: HookOutcome;
  /**
   * An unexpected error (not a HookFailure), or stdin that is not a deployment: an executable hook exits 1 then, as
   * upstream's hooks do when they die on either.
   */
  readonly crashed: boolean;
}

/**
 * The whole life of a built-in hook, in-process or as an executable: read the deployment, run the hook, and turn any
 * error into a failure result naming the cause, so the agent never mistakes a broken hook for an empty success.
 */
export async function executeHook(
  hook: BuiltinHook,
  read: () => Promise<HookDeployment> | HookDeployment,
  ctx: HookContext,
): Promise<HookExecution> {
  const { log } = ctx;
  let reading = true;
  try {
    const deployment = await read();
    reading = false;
    log.addSecrets(deployment.inputs);
    return { outcome: await hook.run(deployment, ctx), crashed: false };
  } catch (err) {
    if (err instanceof HookFailure) {
      log.error('hook failed', { reason: err.message });
      return { outcome: failure(log.mask(err.message)), crashed: reading };
    }
    log.error('hook crashed', { reason: err instanceof Error && err.stack ? err.stack : errorMessage(err) });
    return { outcome: failure(log.mask(`the ${hook.group} hook failed: ${errorMessage(err)}`)), crashed: true };
  }
}
