import type { PipelineContext } from '../pipeline/contract.js';

export type { PipelineContext } from '../pipeline/contract.js';

// What runs after a collection found changes: the configured command (upstream behaviour), or the agent's native
// pipeline (apply + deployments in-process). A pipeline throws PipelineFailedError to keep the cache uncommitted.

export interface Pipeline {
  readonly name: string;
  run(ctx: PipelineContext): Promise<void>;
}

export { CommandFailedError as PipelineFailedError } from '../errors.js';
