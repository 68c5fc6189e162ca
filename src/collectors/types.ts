import type { AgentConfig } from '../config/options.js';
import type { HttpClient } from '../http/types.js';
import type { Logger } from '../log/logger.js';
import type { PathMapper } from '../util/rooted-path.js';

export type CollectorName = 'heat_local' | 'ec2' | 'cfn' | 'heat' | 'request' | 'local' | 'zaqar';

/** One cache entry a collector produces: written to <cachedir>/<key>.json. */
export interface CollectedPair {
  readonly key: string;
  readonly value: unknown;
}

export interface CollectResult {
  /** Pairs in upstream order: the collector's own entry first, then exploded deployments. */
  readonly pairs: readonly CollectedPair[];
  /** The source answered "not modified": pairs are the previous ones and need no rewrite. */
  readonly unchanged?: boolean;
}

export interface CollectContext {
  readonly config: AgentConfig;
  readonly paths: PathMapper;
  /** Child logger bound to {collector: name}. */
  readonly log: Logger;
  readonly http: HttpClient;
  /** Aborted on shutdown: long requests must stop promptly. */
  readonly signal: AbortSignal;
  /** This collector's memory across polls (ETags, tokens, last pairs); empty after a restart. */
  readonly memory: Map<string, unknown>;
  readonly now: () => number;
}

/**
 * A metadata source. collect() returns pairs, or throws SourceNotConfiguredError (skipped quietly) or
 * SourceUnavailableError (logged, the last good data is kept). Any other error is a bug, logged with its stack.
 */
export interface Collector {
  readonly name: CollectorName;
  collect(ctx: CollectContext): Promise<CollectResult>;
  /** Local paths whose changes should start a cycle at once (watched with chokidar). */
  watchPaths?(config: AgentConfig): readonly string[];
}
