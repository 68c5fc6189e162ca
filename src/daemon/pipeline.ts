import type { PipelineContext } from '../pipeline/contract.js';

export type { PipelineContext } from '../pipeline/contract.js';

// What runs after a collection found changes: the configured command (upstream behaviour), or the agent's native
// pipeline (apply + deployments in-process). A pipeline that throws keeps the cache uncommitted (a CommandFailedError
// gives the cycle its exit code).

export interface Pipeline {
  readonly name: string;
  run(ctx: PipelineContext): Promise<void>;
}
