import type { PipelineContext } from '../pipeline/contract.js';
import type { LoadedConfig } from '../config/load.js';
import type { HttpClient } from '../http/types.js';
import type { Logger } from '../log/logger.js';
import {
  runDeployments,
  settleAppliedDeployments,
  type CycleOutcome,
  type DeployReport,
  type SettleReport,
} from './dispatch.js';
import { deploymentsFrom, writeHeatConfigFile } from './deployments-input.js';

export { flushOutbox, type FlushReport } from '../signals/outbox.js';

// The native pipeline's deployment step (upstream: configure.d/55-heat-config). Takes the deployments of this cycle's
// merged metadata, writes them to the heat-config file for upstream tools, and runs them. A failing hook is signalled
// to Heat and does not fail the step; only local failures (state directory, heat-config file, the lock) throw, which
// leaves the cycle uncommitted so it is retried.
/**
 * The step's work, returning the report (for callers that want the counts). `env` is the hooks' environment: the
 * phase's, as upstream's hooks inherit it from os-refresh-config (OS_CONFIG_FILES among it).
 */
export async function deployFromPairs(
  loaded: LoadedConfig,
  log: Logger,
  http: HttpClient,
  ctx: Pick<PipelineContext, 'pairs' | 'signal'>,
  env?: NodeJS.ProcessEnv,
): Promise<DeployReport> {
  const deployments = deploymentsFrom(
    ctx.pairs.map((p) => p.value),
    log,
  );
  if (deployments !== undefined) await writeHeatConfigFile(loaded.config, deployments);
  return runDeployments({
    config: loaded.config,
    paths: loaded.paths,
    log,
    http,
    signal: ctx.signal,
    deployments,
    ...(env ? { env } : {}),
  });
}

/** The end of a cycle: its os-apply-config deployments are signalled with its outcome (apply-group.ts). */
export async function settleCycle(
  loaded: LoadedConfig,
  log: Logger,
  http: HttpClient,
  ctx: Pick<PipelineContext, 'pairs' | 'signal'>,
  outcome: CycleOutcome,
): Promise<SettleReport> {
  const deployments = deploymentsFrom(
    ctx.pairs.map((p) => p.value),
    log,
  );
  return settleAppliedDeployments(
    { config: loaded.config, paths: loaded.paths, log, http, signal: ctx.signal, deployments },
    outcome,
  );
}
