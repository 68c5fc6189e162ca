import type { Logger } from '../log/logger.js';
import { isSafeFileName } from '../util/safe-name.js';
import type { CollectedPair } from './types.js';

// os-collect-config's merger: a remote collector's document becomes its own pair first, followed by one pair per
// deployment whose group is os-apply-config or Heat::Ungrouped (or unset), keyed by the deployment name and holding
// its `config`. Other groups stay inside the document for the deployment runner.
// Differences from upstream: a qualifying deployment without `config` is skipped with a warning instead of crashing
// (B8), and a name that is not a safe file name is skipped instead of writing outside the cache (B7).

const EXPLODED_GROUPS = new Set(['os-apply-config', 'Heat::Ungrouped']);

export function explodeDeployments(
  collector: string,
  document: Record<string, unknown>,
  deploymentKeys: readonly string[],
  log: Logger,
): CollectedPair[] {
  const pairs: CollectedPair[] = [{ key: collector, value: document }];
  for (const key of deploymentKeys) {
    if (!Object.prototype.hasOwnProperty.call(document, key)) continue;
    const list = document[key];
    if (!Array.isArray(list)) {
      log.warn({ deploymentKey: key }, 'deployment key was found but does not contain a list');
      continue;
    }
    for (const item of list) {
      if (!item || typeof item !== 'object' || Array.isArray(item)) {
        log.warn({ deploymentKey: key }, 'deployment entry is not an object; skipped');
        continue;
      }
      const dep = item as Record<string, unknown>;
      if (dep.name === undefined || dep.name === null || dep.name === '') {
        log.warn({ deploymentKey: key }, 'no name found for a deployment; skipped');
        continue;
      }
      const group = dep.group;
      if (group !== undefined && !(typeof group === 'string' && EXPLODED_GROUPS.has(group))) continue;
      if (!isSafeFileName(dep.name)) {
        log.warn(
          { deploymentKey: key, deploymentName: String(dep.name).slice(0, 80) },
          'deployment name is not a safe file name; skipped',
        );
        continue;
      }
      if (!Object.prototype.hasOwnProperty.call(dep, 'config')) {
        log.warn({ deploymentKey: key, deploymentName: dep.name }, 'deployment has no config; skipped');
        continue;
      }
      pairs.push({ key: dep.name, value: dep.config });
    }
  }
  return pairs;
}
