import { errorMessage } from '../errors.js';
import { hookNameForGroup } from '../heat/component.js';
import { runRemovalInProcess } from '../hooks/host/in-process.js';
import { loadBuiltinHook, removeWorkFiles } from '../hooks/registry.js';
import type { DeploymentRecord, SignalRecord } from '../state/store.js';
import { hookEnv, killGrace, type DeployContext, type DeployDeps } from './context.js';

// A deployment gone from the metadata: what its built-in hook keeps goes (docker-cmd's containers, a compose project,
// the work files), as upstream's os-refresh-config scripts removed it; then the record says removed, with the state
// it left from, and a signal not yet delivered is cancelled (Heat has moved on, and a late signal could be taken for
// a newer action's).

/**
 * Undo what the deployment's hook keeps, then record it removed. A removal that undid effects (containers gone) is
 * recorded as leaving from pending: listed again, it is applied again rather than said done with nothing running.
 * Undefined when a shutdown cut the hook's removal
 * short: the record stays as it was, so the next pass (after the restart) removes it again rather than leaving its
 * containers behind for good.
 */
export async function markRemoved(deps: DeployDeps, record: DeploymentRecord): Promise<DeploymentRecord | undefined> {
  const { ctx, store } = deps;
  const undo = await undoHook(ctx, record);
  if (undo === 'interrupted') return undefined;
  await removeHookWorkFiles(ctx, record);
  const pending = record.signal.state === 'pending';
  const signal: SignalRecord = pending
    ? {
        state: 'cancelled',
        transport: record.signal.transport,
        attempts: record.signal.attempts,
        lastError: 'the deployment left the metadata before its signal was delivered',
      }
    : record.signal;
  return store.transition(
    record,
    'left-metadata',
    { stateBeforeRemoval: undo === 'undone' ? 'pending' : record.state, removedAt: store.timestamp(), signal },
    pending ? { signalCancelled: true } : {},
  );
}

/**
 * What the deployment's built-in hook left running goes. A failure is logged and not tried again (the tool may be
 * gone for good); the pass goes on. 'undone': the hook's removal ran (a failed one may have undone a part).
 */
async function undoHook(ctx: DeployContext, record: DeploymentRecord): Promise<'nothing' | 'undone' | 'interrupted'> {
  const loading = loadBuiltinHook(hookNameForGroup(record.group));
  if (!loading) return 'nothing';
  let failure: unknown;
  let group: string | undefined;
  try {
    const hook = await loading;
    if (!hook.removed) return 'nothing';
    group = hook.group;
    await runRemovalInProcess({
      hook,
      id: record.id,
      env: hookEnv(ctx),
      log: ctx.log,
      signal: ctx.signal,
      ...killGrace(ctx),
    });
  } catch (err) {
    failure = err;
  }
  // A hook may swallow its killed tool's failure: the shutdown, not the hook's verdict, says the removal is unfinished.
  if (ctx.signal.aborted) {
    ctx.log.info(
      { deploymentId: record.id, group },
      'hook removal interrupted by shutdown; it runs again at the next start',
    );
    return 'interrupted';
  }
  if (failure !== undefined)
    ctx.log.warn({ deploymentId: record.id, reason: errorMessage(failure) }, 'hook removal failed');
  else ctx.log.info({ deploymentId: record.id, group }, 'hook removal done');
  return 'undone';
}

/** The work files its built-in hook kept go (upstream kept them forever). */
async function removeHookWorkFiles(ctx: DeployContext, record: DeploymentRecord): Promise<void> {
  try {
    const files = await removeWorkFiles(hookNameForGroup(record.group), record.id, hookEnv(ctx));
    if (files.length > 0)
      ctx.log.debug(
        { deploymentId: record.id, files: files.map((f) => ctx.paths.unmap(f)) },
        'hook work files removed',
      );
  } catch (err) {
    ctx.log.warn({ deploymentId: record.id, reason: errorMessage(err) }, 'hook work files could not be removed');
  }
}
