import type { AgentConfig } from '../config/options.js';
import type { HttpClient } from '../http/types.js';
import type { Logger } from '../log/logger.js';
import type { PathMapper } from '../util/rooted-path.js';

/** Every collector's name: each is also a cache key (that source's document), so metadata may not use one. */
export const COLLECTOR_NAMES = ['heat_local', 'ec2', 'cfn', 'heat', 'request', 'local', 'zaqar'] as const;

export type CollectorName = (typeof COLLECTOR_NAMES)[number];

/** One cache entry a collector produces: written to <cachedir>/<key>.json. */
export interface CollectedPair {
  readonly key: string;
  readonly value: unknown;
}

export interface CollectResult {
  /** Pairs in upstream order: the collector's own entry first, then exploded deployments. */
  readonly pairs: readonly CollectedPair[];
  /**
   * The source's data is what it was at the last poll (the same file bytes, a 304, no new message): pairs are the
   * previous ones, the same objects, so the pass reuses what it checked of them and the cache what it verified.
   */
  readonly unchanged?: boolean;
}

/**
 * A collector's memory across polls (ETags, tokens, the last document): its own type, every field optional, because
 * it starts empty ({}) at start-up and after a restart, and a poll must cope with any field missing.
 */
export type CollectorMemory<M extends object> = { -readonly [K in keyof M]?: M[K] };

export interface CollectContext<M extends object = object> {
  readonly config: AgentConfig;
  readonly paths: PathMapper;
  /** Child logger bound to {collector: name}. */
  readonly log: Logger;
  readonly http: HttpClient;
  /** Aborted on shutdown: long requests must stop promptly. */
  readonly signal: AbortSignal;
  /** This collector's memory across polls; the caller keeps it and hands it to no other collector. */
  readonly memory: CollectorMemory<M>;
  readonly now: () => number;
}

/**
 * A metadata source. collect() returns pairs, or throws SourceNotConfiguredError (skipped quietly) or
 * SourceUnavailableError (logged, the last good data is kept). Any other error is a bug, logged with its stack.
 */
export interface Collector<M extends object = object> {
  readonly name: CollectorName;
  // A method, not a function property: the registry lists collectors of different memory types as Collector (with
  // object memory), which method parameters allow. Sound because each memory object starts as {} (valid for every
  // CollectorMemory) and is only ever given to the collector it was made for (daemon/collect-all.ts).
  collect(ctx: CollectContext<M>): Promise<CollectResult>;
  /** Local paths whose changes should start a cycle at once (watched with chokidar). */
  watchPaths?(config: AgentConfig): readonly string[];
}
