import path from 'node:path';
import { errorMessage } from '../errors.js';
import type { HttpClient } from '../http/types.js';
import type { HookContext } from '../hooks/contract.js';
import { withDeployLock } from '../state/deploy-lock.js';
import { DeployLockedError } from '../state/errors.js';
import type { PathMapper } from '../util/rooted-path.js';
import { initSection } from './cfn-init.js';
import { cfnPath } from './cfn-paths.js';
import { readCredentialFile } from './credentials.js';
import type { CfnEndpoint } from './endpoint.js';
import { runHookAction, type ActionOutcome } from './hook-action.js';
import { pathEvent } from './hup-changes.js';
import { watchedResources, type HupConfig, type HupHook } from './hup-config.js';
import { readBaseline, saveMetadata } from './metadata-store.js';
import { retrieveMetadata } from './retrieve.js';
import { restartDeadServices } from './service-monitor.js';

// One cfn-hup check, for `cfn-hup -f` and the daemon's built-in cfn-hup alike. For each resource a hook watches: its
// metadata from heat-api-cfn (signed with the credential file's keys); services cfn-init wants running that died are
// started again and fire service.restarted; each hook whose path's value was added, changed or removed since the copy
// saved last time fires on post.add, post.update or post.remove; then the new metadata is saved. It is saved after the
// actions ran, so an agent stopped half-way fires them again rather than never. One resource failing does not stop
// the others. One check runs at a time on a machine (cron's cfn-hup -f and the daemon's share a lock file).

export interface HupPassDeps {
  readonly paths: PathMapper;
  /** The actions' environment, the log, and how service tools start. */
  readonly ctx: HookContext;
  readonly http: () => Promise<HttpClient>;
  readonly endpoint: () => Promise<CfnEndpoint | undefined>;
  /** Seconds a request to heat-api-cfn may stay silent. */
  readonly timeoutSeconds: number;
  readonly caFile?: string | undefined;
}

export interface HupReport {
  /** False when another check held the lock, so this one did nothing. */
  readonly ran: boolean;
  readonly actions: readonly ActionOutcome[];
  /** Why a resource could not be checked, one message each. */
  readonly errors: readonly string[];
}

export async function runHupPass(config: HupConfig, deps: HupPassDeps): Promise<HupReport> {
  const lock = path.join(path.dirname(cfnPath(deps.paths, 'lastMetadata')), '.cfn-hup.lock');
  try {
    return await withDeployLock(lock, () => checkResources(config, deps));
  } catch (err) {
    if (!(err instanceof DeployLockedError)) throw err;
    deps.ctx.log.info('another cfn-hup check is running; this one is skipped', { process: err.holderPid });
    return { ran: false, actions: [], errors: [] };
  }
}

async function checkResources(config: HupConfig, deps: HupPassDeps): Promise<HupReport> {
  const { log } = deps.ctx;
  const credentials = await readCredentialFile(config.main.credentialFile, config.main.shownCredentialFile);
  const actions: ActionOutcome[] = [];
  const errors: string[] = [];
  for (const resource of watchedResources(config)) {
    const hooks = config.hooks.filter((h) => h.resource === resource);
    let metadata: unknown;
    try {
      ({ metadata } = await retrieveMetadata({
        ...deps,
        log,
        stack: config.main.stack,
        resource,
        credentials,
        signal: deps.ctx.signal,
      }));
    } catch (err) {
      log.error('metadata not checked', { resource, reason: errorMessage(err) });
      errors.push(`${resource}: ${errorMessage(err)}`);
      continue;
    }
    const before = await readBaseline(deps.paths, resource);
    for (const service of await restartDeadServices(initSection(metadata), deps.ctx))
      actions.push(...(await fire(hooks, 'service.restarted', deps, service)));
    for (const hook of hooks) {
      const event = pathEvent(before, metadata, hook.keys);
      if (event === undefined) continue;
      log.info('metadata changed', { resource, path: hook.path, event });
      if (hook.triggers.includes(event)) actions.push(...(await fire([hook], event, deps)));
    }
    // Stopped half-way (the agent shutting down): the changes fire again at the next check.
    if (deps.ctx.signal.aborted) break;
    try {
      await saveMetadata(deps.paths, metadata, resource);
    } catch (err) {
      log.error('metadata not saved; its changes will fire again', { resource, reason: errorMessage(err) });
      errors.push(`${resource}: the metadata could not be saved: ${errorMessage(err)}`);
    }
  }
  return { ran: true, actions, errors };
}

async function fire(hooks: readonly HupHook[], event: string, deps: HupPassDeps, service?: string) {
  const outcomes: ActionOutcome[] = [];
  for (const hook of hooks) {
    if (!(hook.triggers as readonly string[]).includes(event)) continue;
    if (service) deps.ctx.log.info('service restarted; firing its hooks', { service, hook: hook.name });
    if (deps.ctx.signal.aborted) break;
    outcomes.push(await runHookAction(hook, event, deps.ctx.env, deps.ctx.log, deps.ctx.signal));
  }
  return outcomes;
}
