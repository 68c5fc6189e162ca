import type { MetadataCache } from '../cache/metadata-cache.js';
import { StoreMemo } from '../cache/store-memo.js';
import type { CollectionOutcome, CollectorFailure } from '../pipeline/contract.js';
import { findCollector } from '../collectors/registry.js';
import { withoutReservedKeys } from '../collectors/reserved-keys.js';
import type { CollectContext, CollectedPair, CollectorName, CollectResult } from '../collectors/types.js';
import type { AgentConfig } from '../config/options.js';
import {
  AgentError,
  errorMessage,
  ReservedNameError,
  SourceNotConfiguredError,
  SourceUnavailableError,
  type ErrorCode,
} from '../errors.js';
import type { HttpClient } from '../http/types.js';
import type { Logger } from '../log/logger.js';
import { isSafeFileName } from '../util/safe-name.js';
import type { PathMapper } from '../util/rooted-path.js';
import { isJsonObject, setOwnKey, shallowMerge, type JsonObject } from '../util/json-merge.js';
import { MAX_JSON_DEPTH, jsonDepth } from '../util/json-depth.js';
import {
  recordReservedNameFindings,
  reservedNameFindingsFile,
  type SourceClash,
} from '../state/reserved-name-findings.js';

// One pass over the configured collectors, in order (upstream collect_all). Differences from upstream, each to keep
// the last good state: an unavailable source contributes its last good pairs (so its files stay in OS_CONFIG_FILES,
// B13); a collector bug is logged and treated as unavailable instead of killing the daemon (B8); a key produced
// twice in one pass is kept once, at its last position with its last value (B6); unsafe keys are dropped (B7); a
// pair under a reserved key (os_config_files, a collector's name: collectors/reserved-keys.ts) is left out and the
// source reported failing with ERR_RESERVED_NAME, its other pairs used (upstream overwrote the file list or the
// other source's document).

export type { CollectionOutcome } from '../pipeline/contract.js';

export interface CollectDeps {
  readonly config: AgentConfig;
  readonly paths: PathMapper;
  readonly log: Logger;
  readonly http: HttpClient;
  readonly signal: AbortSignal;
  /** Per-collector memory, kept by the caller across passes. */
  readonly memory: CollectorMemories;
  /** What the cache verified at the last passes, kept by the caller (the daemon) across passes. */
  readonly storeMemo?: StoreMemo;
  /** Collectors whose last pass failed, to log a failure once per transition. */
  readonly failing: Set<string>;
  readonly now?: () => number;
  /** Told each configured source's outcome (the daemon publishes them for `status`). */
  readonly onSource?: (name: string, failure: { code: ErrorCode; message: string } | undefined) => void;
}

/**
 * What is kept for one collector across passes: its own memory (opaque here), the last good pairs it gave, and
 * whether they were taken whole (no value refused): then a pass whose source is unchanged reuses them as they are.
 */
export interface CollectorSlot {
  readonly memory: object;
  lastPairs?: readonly CollectedPair[];
  lastWhole?: boolean;
}

export type CollectorMemories = Map<string, CollectorSlot>;

/** What the passes of one daemon keep across polls: the collectors' memories, the cache's, the sources failing. */
export function newCollectionMemory(): Pick<CollectDeps, 'memory' | 'storeMemo' | 'failing'> {
  return { memory: new Map(), storeMemo: new StoreMemo(), failing: new Set() };
}

export async function collectAll(deps: CollectDeps, cache: MetadataCache | undefined): Promise<CollectionOutcome> {
  const ordered: CollectedPair[] = [];
  const failures: CollectorFailure[] = [];
  const available: string[] = [];
  const clashes = new Map<string, SourceClash>();
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
      const { pairs, refused, problem } = usablePairs(name, await collector.collect(ctx), slot, log);
      ordered.push(...pairs);
      available.push(name);
      // The source's usable data is kept, but it is reported as failing until the refused values are gone.
      clashes.set(name, { clash: refused[0]?.message });
      if (problem) {
        failures.push(sourceFailed(deps, name, problem, log));
        continue;
      }
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
  const { files, changedKeys } = await storePairs(cache, pairs, deps.storeMemo);
  await keepClashes(deps, clashes);
  return { pairs, files, changedKeys, failures, available };
}

/**
 * What of a collector's result the cache takes (checkedPairs, withoutReservedKeys), remembered in its slot. A result
 * the source marked unchanged (the same bytes, a 304) after a pass that took everything is that pass's pairs as they
 * are: they were checked then.
 */
function usablePairs(
  name: string,
  result: CollectResult,
  slot: CollectorSlot,
  log: Logger,
): { pairs: readonly CollectedPair[]; refused: readonly ReservedNameError[]; problem: AgentError | undefined } {
  const reused = result.unchanged === true && slot.lastWhole === true ? slot.lastPairs : undefined;
  if (reused) return { pairs: reused, refused: [], problem: undefined };
  const tooDeep: SourceUnavailableError[] = [];
  const { pairs, refused } = withoutReservedKeys(name, checkedPairs(name, result.pairs, slot.lastPairs, tooDeep, log));
  const problem = tooDeep[0] ?? refused[0];
  slot.lastPairs = pairs;
  slot.lastWhole = problem === undefined;
  return { pairs, refused, problem };
}

async function storePairs(
  cache: MetadataCache,
  pairs: readonly CollectedPair[],
  memo: StoreMemo | undefined,
): Promise<{ files: string[]; changedKeys: string[] }> {
  const files: string[] = [];
  const changedKeys: string[] = [];
  for (const pair of pairs) {
    const stored = await cache.store(pair.key, pair.value, memo);
    files.push(stored.path);
    if (stored.changed) changedKeys.push(pair.key);
  }
  memo?.keepOnly(new Set(files));
  return { files, changedKeys };
}

/** The reserved-name clashes, on disk for `status` when no daemon runs; a failure to write them is only logged. */
async function keepClashes(deps: CollectDeps, clashes: ReadonlyMap<string, SourceClash>): Promise<void> {
  const file = reservedNameFindingsFile(deps.config);
  const now = (deps.now ?? Date.now)();
  await recordReservedNameFindings(file, deps.config.DEFAULT.collectors, clashes, now).catch((err: unknown) =>
    deps.log.warn({ file, reason: errorMessage(err) }, 'cannot keep the reserved-name findings for status'),
  );
}

/**
 * A collector's pairs as the cache may take them. A value nested too deep to carry is refused by itself, naming the
 * key, and the rest of the document is kept: a top-level key of a document, or else the pair, keeps its last good
 * value (or is left out). An unsafe key is dropped.
 */
function checkedPairs(
  name: string,
  pairs: readonly CollectedPair[],
  lastPairs: readonly CollectedPair[] | undefined,
  tooDeep: SourceUnavailableError[],
  log: Logger,
): CollectedPair[] {
  const out: CollectedPair[] = [];
  for (const p of pairs) {
    if (!isSafeFileName(p.key)) {
      log.warn({ key: String(p.key).slice(0, 80) }, 'key is not a safe file name; dropped');
      continue;
    }
    if (jsonDepth(p.value) <= MAX_JSON_DEPTH) {
      out.push(p);
      continue;
    }
    const last = lastPairs?.find((l) => l.key === p.key)?.value;
    const value = withoutDeepKeys(p.key, p.value, last, (key) => {
      log.debug({ key: key.slice(0, 160), maxDepth: MAX_JSON_DEPTH }, 'value is nested too deep to carry; refused');
      tooDeep.push(
        new SourceUnavailableError(
          name,
          `data for "${key.slice(0, 160)}" is nested deeper than ${MAX_JSON_DEPTH} levels; refused (its last good value and the rest of the document are kept)`,
          { code: 'ERR_SOURCE_INVALID_DATA' },
        ),
      );
    });
    if (value !== undefined) out.push({ key: p.key, value });
  }
  return out;
}

/** A too deep value without its too deep top-level keys, each replaced by its last good value when there is one. */
function withoutDeepKeys(key: string, value: unknown, last: unknown, refuse: (key: string) => void): unknown {
  if (!isJsonObject(value)) {
    refuse(key);
    return last;
  }
  const kept: JsonObject = {};
  for (const k of Object.keys(value)) {
    if (jsonDepth(value[k]) < MAX_JSON_DEPTH) setOwnKey(kept, k, value[k]);
    else {
      refuse(`${key}.${k}`);
      if (isJsonObject(last) && Object.hasOwn(last, k)) setOwnKey(kept, k, last[k]);
    }
  }
  return kept;
}

/** A source that failed this pass: told to the observer, logged once per transition (a bug always). */
function sourceFailed(deps: CollectDeps, name: string, err: unknown, log: Logger): CollectorFailure {
  const code: ErrorCode = err instanceof AgentError ? err.code : 'ERR_SOURCE_UNEXPECTED';
  const message = errorMessage(err);
  deps.onSource?.(name, { code, message });
  const first = !deps.failing.has(name);
  deps.failing.add(name);
  if (err instanceof SourceUnavailableError || err instanceof ReservedNameError) {
    // Log once per transition at warn; repeats at debug so a down source does not flood the journal.
    const msg = err instanceof ReservedNameError ? 'source entry under a reserved name left out' : 'source unavailable';
    log[first ? 'warn' : 'debug']({ code, reason: message }, msg);
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
