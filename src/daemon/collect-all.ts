import type { MetadataCache } from '../cache/metadata-cache.js';
import type { CollectionOutcome, CollectorFailure } from '../pipeline/contract.js';
import { findCollector } from '../collectors/registry.js';
import type { CollectContext, CollectedPair, CollectorName } from '../collectors/types.js';
import type { AgentConfig } from '../config/options.js';
import {
  AgentError,
  errorMessage,
  SourceNotConfiguredError,
  SourceUnavailableError,
  type ErrorCode,
} from '../errors.js';
import type { HttpClient } from '../http/types.js';
import type { Logger } from '../log/logger.js';
import { isSafeFileName } from '../util/safe-name.js';
import type { PathMapper } from '../util/rooted-path.js';
import { shallowMerge, type JsonObject } from '../util/json-merge.js';
import { MAX_JSON_DEPTH, jsonDepth } from '../util/json-depth.js';

// One pass over the configured collectors, in order (upstream collect_all). Differences from upstream, each to keep
// the last good state: an unavailable source contributes its last good pairs (so its files stay in OS_CONFIG_FILES,
// B13); a collector bug is logged and treated as unavailable instead of killing the daemon (B8); a key produced
// twice in one pass is kept once, at its last position with its last value (B6); unsafe keys are dropped (B7).

export type { CollectionOutcome } from '../pipeline/contract.js';

export interface CollectDeps {
  readonly config: AgentConfig;
  readonly paths: PathMapper;
  readonly log: Logger;
  readonly http: HttpClient;
  readonly signal: AbortSignal;
  /** Per-collector memory, kept by the caller across passes. */
  readonly memory: CollectorMemories;
  /** Collectors whose last pass failed, to log a failure once per transition. */
  readonly failing: Set<string>;
  readonly now?: () => number;
  /** Told each configured source's outcome (the daemon publishes them for `status`). */
  readonly onSource?: (name: string, failure: { code: ErrorCode; message: string } | undefined) => void;
}

/** What is kept for one collector across passes: its own memory (opaque here), and the last good pairs it gave. */
export interface CollectorSlot {
  readonly memory: object;
  lastPairs?: readonly CollectedPair[];
}

export type CollectorMemories = Map<string, CollectorSlot>;

export async function collectAll(deps: CollectDeps, cache: MetadataCache | undefined): Promise<CollectionOutcome> {
  const ordered: CollectedPair[] = [];
  const failures: CollectorFailure[] = [];
  const available: string[] = [];
  for (const name of deps.config.DEFAULT.collectors) {
    if (deps.signal.aborted) break;
    const log = deps.log.child({ collector: name });
    const collector = findCollector(name as CollectorName);
    if (!collector) {
      log.debug('collector is not part of this build; skipped');
      continue;
    }
    let slot = deps.memory.get(name);
    if (!slot) {
      slot = { memory: {} };
      deps.memory.set(name, slot);
    }
    const ctx: CollectContext = {
      config: deps.config,
      paths: deps.paths,
      log,
      http: deps.http,
      signal: deps.signal,
      memory: slot.memory,
      now: deps.now ?? Date.now,
    };
    try {
      const pairs = checkedPairs(name, (await collector.collect(ctx)).pairs, log);
      slot.lastPairs = pairs;
      ordered.push(...pairs);
      available.push(name);
      deps.onSource?.(name, undefined);
      if (deps.failing.delete(name)) log.info('source available again');
    } catch (err) {
      if (err instanceof SourceNotConfiguredError) {
        log.debug({ reason: err.message }, 'source not configured');
        continue;
      }
      failures.push(sourceFailed(deps, name, err, log));
      if (slot.lastPairs) ordered.push(...slot.lastPairs);
    }
  }
  const pairs = dedupe(ordered, deps.log);
  if (!cache) return { pairs, files: [], changedKeys: [], failures, available };
  const files: string[] = [];
  const changedKeys: string[] = [];
  for (const pair of pairs) {
    const stored = await cache.store(pair.key, pair.value);
    files.push(stored.path);
    if (stored.changed) changedKeys.push(pair.key);
  }
  return { pairs, files, changedKeys, failures, available };
}

/** A collector's pairs as the cache may take them: too deep refuses the source, an unsafe key is dropped. */
function checkedPairs(name: string, pairs: readonly CollectedPair[], log: Logger): CollectedPair[] {
  for (const p of pairs) {
    if (jsonDepth(p.value) > MAX_JSON_DEPTH) {
      throw new SourceUnavailableError(
        name,
        `data for "${String(p.key).slice(0, 80)}" is nested deeper than ${MAX_JSON_DEPTH} levels; refused`,
        { code: 'ERR_SOURCE_INVALID_DATA' },
      );
    }
  }
  return pairs.filter((p) => {
    if (isSafeFileName(p.key)) return true;
    log.warn({ key: String(p.key).slice(0, 80) }, 'key is not a safe file name; dropped');
    return false;
  });
}

/** A source that failed this pass: told to the observer, logged once per transition (a bug always). */
function sourceFailed(deps: CollectDeps, name: string, err: unknown, log: Logger): CollectorFailure {
  const code: ErrorCode = err instanceof AgentError ? err.code : 'ERR_SOURCE_UNEXPECTED';
  const message = errorMessage(err);
  deps.onSource?.(name, { code, message });
  const first = !deps.failing.has(name);
  deps.failing.add(name);
  if (err instanceof SourceUnavailableError) {
    // Log once per transition at warn; repeats at debug so a down source does not flood the journal.
    log[first ? 'warn' : 'debug']({ code, reason: message }, 'source unavailable');
  } else {
    log.error({ code, err }, 'collector failed unexpectedly; treating the source as unavailable');
  }
  return { collector: name, code, message };
}

function dedupe(pairs: readonly CollectedPair[], log: Logger): CollectedPair[] {
  const lastIndex = new Map<string, number>();
  pairs.forEach((p, i) => lastIndex.set(p.key, i));
  const out: CollectedPair[] = [];
  pairs.forEach((p, i) => {
    if (lastIndex.get(p.key) === i) out.push(p);
    else log.warn({ key: p.key }, 'two sources produced the same cache key; the later one wins');
  });
  return out;
}

/** The merged document `--print` shows: every pair as a top-level key, later pairs replacing earlier ones. */
export function mergePairs(pairs: readonly CollectedPair[]): JsonObject {
  const out: JsonObject = {};
  for (const p of pairs) shallowMerge(out, { [p.key]: p.value } as JsonObject);
  return out;
}
