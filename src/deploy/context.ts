import type { AgentConfig } from '../config/options.js';
import type { Deployment } from '../heat/deployment.js';
import { runHook, type HookRunner } from '../hooks/host/external.js';
import type { HttpClient } from '../http/types.js';
import type { Logger } from '../log/logger.js';
import { signalPolicyFor } from '../signals/engine/policy.js';
import type { OutboxDeps } from '../signals/outbox.js';
import { storeFor, type StateStore, type TransitionListener } from '../state/store.js';
import { ROOT_ENV, type PathMapper } from '../util/rooted-path.js';

// What every part of a deployment run works with: the caller's context, and what is built from it once per run (the
// state store, the outbox's settings, the hook runner).

export interface DeployContext {
  readonly config: AgentConfig;
  readonly paths: PathMapper;
  readonly log: Logger;
  readonly http: HttpClient;
  /** Aborted on shutdown: the running hook is stopped and left to run again at the next start. */
  readonly signal: AbortSignal;
  /** Heat's deployments list; undefined when the metadata has no `deployments` key (then nothing counts as removed). */
  readonly deployments: readonly unknown[] | undefined;
  readonly runner?: HookRunner;
  /** Environment of the hooks (default: the agent's). */
  readonly env?: NodeJS.ProcessEnv;
  readonly now?: () => number;
  readonly random?: () => number;
  /** Called after each state change is on disk (tests use it to kill the process at every step). */
  readonly onTransition?: TransitionListener;
  /** Milliseconds between SIGTERM and SIGKILL when a hook times out. */
  readonly killGraceMs?: number;
}

export interface DeployDeps {
  readonly ctx: DeployContext;
  readonly store: StateStore;
  readonly outbox: OutboxDeps;
  readonly runner: HookRunner;
}

export function depsFor(ctx: DeployContext): DeployDeps {
  const now = ctx.now ?? Date.now;
  const store = storeFor(ctx.config, ctx.log, now, ctx.onTransition);
  return {
    ctx,
    store,
    runner: ctx.runner ?? runHook,
    outbox: {
      store,
      http: ctx.http,
      log: ctx.log,
      policy: signalPolicyFor(ctx.config, { now, ...(ctx.random ? { random: ctx.random } : {}), signal: ctx.signal }),
    },
  };
}

/** The logger of one deployment's lines. */
export function deploymentLog(ctx: DeployContext, dep: Pick<Deployment, 'id' | 'name'>): Logger {
  return ctx.log.child({ deploymentId: dep.id, deploymentName: dep.name });
}

/**
 * The agent's environment (or the one given); under --root also OS_CONFIG_AGENT_ROOT, so hooks can place their own
 * work files under the same root.
 */
export function hookEnv(ctx: DeployContext): NodeJS.ProcessEnv {
  const env = ctx.env ?? process.env;
  return ctx.paths.root === '/' ? env : { ...env, [ROOT_ENV]: ctx.paths.root };
}

/** The kill grace of the context, as the hook hosts take it. */
export function killGrace(ctx: DeployContext): { killGraceMs?: number } {
  return ctx.killGraceMs !== undefined ? { killGraceMs: ctx.killGraceMs } : {};
}
