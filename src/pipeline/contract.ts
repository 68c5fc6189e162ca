import type { LoadedConfig } from '../config/load.js';
import type { ErrorCode } from '../errors.js';
import type { Logger } from '../log/logger.js';
import type { CollectedPair } from '../collectors/types.js';

// What one collection pass hands to the work after it. The daemon runs the pass and calls these seams; what plugs
// into them (self-configuration, the deployment step) sits in lower layers, so the types live here, at the layer of
// what they describe, and nothing below the daemon imports from it (eslint.config.js, "Layers").

export interface CollectorFailure {
  readonly collector: string;
  readonly code: ErrorCode;
  readonly message: string;
}

export interface CollectionOutcome {
  readonly pairs: readonly CollectedPair[];
  /** Cache paths of the pairs, in order (empty when not storing). */
  readonly files: readonly string[];
  readonly changedKeys: readonly string[];
  readonly failures: readonly CollectorFailure[];
  /** Collectors that produced data this pass (fresh or unchanged). */
  readonly available: readonly string[];
}

export interface AfterCollectContext {
  readonly loaded: LoadedConfig;
  readonly log: Logger;
  readonly signal: AbortSignal;
}

/** Runs after each collection; returning reload=true reloads the configuration and collects again in this cycle. */
export type AfterCollectHook = (outcome: CollectionOutcome, ctx: AfterCollectContext) => Promise<{ reload: boolean }>;

/** What a pipeline (the configured command, or the native phases with apply and deployments) is given to run on. */
export interface PipelineContext {
  readonly loaded: LoadedConfig;
  readonly log: Logger;
  readonly signal: AbortSignal;
  /** Cache files of this cycle in order: the value of OS_CONFIG_FILES. */
  readonly configFiles: readonly string[];
  /** Pairs of this cycle (deduplicated, in order). */
  readonly pairs: readonly CollectedPair[];
  readonly changedKeys: readonly string[];
  readonly force: boolean;
}
