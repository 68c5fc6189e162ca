import { ReservedNameError } from '../errors.js';
import { COLLECTOR_NAMES, type CollectedPair } from './types.js';

// Cache keys the agent keeps for itself. <cachedir>/os_config_files.json is the cache's file list, and
// <cachedir>/<collector>.json is that source's document: a local file or an exploded deployment under one of those
// names would overwrite it (upstream let it, so a deployment named `request` replaced the request source's document
// and the deployments in it never ran). Such a pair is left out and reported; the rest of the source is used.

/** The key of the cache's own file list (os_config_files.json). */
export const META_LIST_KEY = 'os_config_files';

const RESERVED: ReadonlySet<string> = new Set<string>([META_LIST_KEY, ...COLLECTOR_NAMES]);

/** `local` has no document of its own: each of its files is a pair of its own, none of them under its name. */
const NO_OWN_DOCUMENT: ReadonlySet<string> = new Set<string>(['local']);

export interface ReservedCheck {
  readonly pairs: CollectedPair[];
  /** One error per pair left out, in order. */
  readonly refused: ReservedNameError[];
}

export function isReservedKey(key: string): boolean {
  return RESERVED.has(key);
}

/**
 * A collector's pairs without those under a reserved key. Its own document (the first pair, named after it) is the
 * one pair allowed a collector's name.
 */
export function withoutReservedKeys(collector: string, pairs: readonly CollectedPair[]): ReservedCheck {
  const kept: CollectedPair[] = [];
  const refused: ReservedNameError[] = [];
  pairs.forEach((pair, index) => {
    const ownDocument = index === 0 && pair.key === collector && !NO_OWN_DOCUMENT.has(collector);
    if (ownDocument || !isReservedKey(pair.key)) {
      kept.push(pair);
      return;
    }
    const what = collector === 'local' ? 'a local file' : 'a deployment';
    refused.push(
      new ReservedNameError(
        collector,
        `${what} named "${pair.key}" from ${collector} was left out: that name is reserved for ${
          pair.key === META_LIST_KEY ? "the cache's file list" : `the ${pair.key} source's document`
        }; rename it`,
      ),
    );
  });
  return { pairs: kept, refused };
}
