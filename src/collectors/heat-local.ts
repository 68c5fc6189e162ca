import { SourceUnavailableError } from '../errors.js';
import { shallowMerge, type JsonObject } from '../util/json-merge.js';
import { JsonFileMemo } from '../util/json-file-memo.js';
import { TrustCheck } from '../util/trust.js';
import { untrustedSource } from './source-error.js';
import { resultOfRead, type LastRead, type ReadFile } from './last-read.js';
import type { CollectContext, Collector, CollectResult } from './types.js';

// `heat_local`: the metadata Heat hands over at boot. cloud-init's Heat part-handler writes it to
// /var/lib/heat-cfntools/cfn-init-data (and a copy under /var/lib/cloud/data). Every configured file that holds a
// JSON object is merged shallowly in order (later files win); nothing found means "unavailable". Its deployments run as
// root, so a file the trust rule refuses (util/trust.ts: another user's, or writable by others, itself or a directory
// above it) makes the whole source unavailable (upstream read it regardless). When the same files hold the same bytes
// as at the last poll, the last poll's document is returned, the same object, marked unchanged: nothing is parsed or
// merged again.

interface HeatLocalMemory {
  files: JsonFileMemo;
  last: LastRead;
}

export const heatLocalCollector: Collector<HeatLocalMemory> = {
  name: 'heat_local',
  watchPaths: (config) => config.heat_local.path,
  async collect(ctx: CollectContext<HeatLocalMemory>): Promise<CollectResult> {
    const memo = (ctx.memory.files ??= new JsonFileMemo());
    let merged: JsonObject | undefined;
    const sources: ReadFile[] = [];
    const trust = new TrustCheck();
    for (const file of ctx.config.heat_local.path) {
      const verdict = trust.judge(file);
      if (verdict.kind === 'untrusted') throw untrustedSource('heat_local', file, verdict);
      const read = await memo.read(file, ctx.config.agent.max_source_bytes);
      if (!read.ok) {
        if (read.reason !== 'missing')
          ctx.log.warn({ file, reason: `${read.reason}: ${read.detail}` }, 'heat_local file skipped');
        continue;
      }
      if (!read.value || typeof read.value !== 'object' || Array.isArray(read.value)) {
        ctx.log.warn({ file }, 'heat_local file does not hold a JSON object; skipped');
        continue;
      }
      sources.push({ file, digest: read.digest });
      merged = shallowMerge(merged ?? {}, read.value as JsonObject);
    }
    if (!merged || Object.keys(merged).length === 0) {
      ctx.memory.last = undefined;
      throw new SourceUnavailableError(
        'heat_local',
        `no heat_local metadata in ${ctx.config.heat_local.path.join(', ')}`,
      );
    }
    const document = merged;
    return resultOfRead(ctx.memory, sources, () => [{ key: 'heat_local', value: document }]);
  },
};
