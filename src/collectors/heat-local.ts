import { SourceUnavailableError } from '../errors.js';
import { shallowMerge, type JsonObject } from '../util/json-merge.js';
import { readJsonFile } from '../util/read-json-file.js';
import { TrustCheck } from '../util/trust.js';
import { untrustedSource } from './source-error.js';
import type { CollectContext, Collector, CollectResult } from './types.js';

// `heat_local`: the metadata Heat hands over at boot. cloud-init's Heat part-handler writes it to
// /var/lib/heat-cfntools/cfn-init-data (and a copy under /var/lib/cloud/data). Every configured file that holds a
// JSON object is merged shallowly in order (later files win); nothing found means "unavailable". Its deployments run as
// root, so a file the trust rule refuses (util/trust.ts: another user's, or writable by others, itself or a directory
// above it) makes the whole source unavailable (upstream read it regardless).

export const heatLocalCollector: Collector = {
  name: 'heat_local',
  watchPaths: (config) => config.heat_local.path,
  async collect(ctx: CollectContext): Promise<CollectResult> {
    let merged: JsonObject | undefined;
    const trust = new TrustCheck();
    for (const file of ctx.config.heat_local.path) {
      const verdict = await trust.judge(file);
      if (verdict.kind === 'untrusted') throw untrustedSource('heat_local', file, verdict);
      const read = await readJsonFile(file, ctx.config.agent.max_source_bytes);
      if (!read.ok) {
        if (read.reason !== 'missing')
          ctx.log.warn({ file, reason: read.reason, detail: read.detail }, 'heat_local file skipped');
        continue;
      }
      if (!read.value || typeof read.value !== 'object' || Array.isArray(read.value)) {
        ctx.log.warn({ file }, 'heat_local file does not hold a JSON object; skipped');
        continue;
      }
      merged = shallowMerge(merged ?? {}, read.value as JsonObject);
    }
    if (!merged || Object.keys(merged).length === 0) {
      throw new SourceUnavailableError(
        'heat_local',
        `no heat_local metadata in ${ctx.config.heat_local.path.join(', ')}`,
      );
    }
    return { pairs: [{ key: 'heat_local', value: merged }] };
  },
};
