import type { CollectedPair } from '../collectors/types.js';
import type { LoadedConfig } from '../config/load.js';
import type { Logger } from '../log/logger.js';

// What runs after a collection found changes: the configured command (upstream behaviour), or the agent's native
// pipeline (apply + deployments in-process). A pipeline throws PipelineFailedError to keep the cache uncommitted.

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

export interface Pipeline {
  readonly name: string;
  run(ctx: PipelineContext): Promise<void>;
}

export { CommandFailedError as PipelineFailedError } from '../errors.js';
