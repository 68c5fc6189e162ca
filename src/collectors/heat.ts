import { SourceUnavailableError } from '../errors.js';
import type { HttpResponse } from '../http/types.js';
import { findEndpoint, type KeystoneMemory, type KeystoneSession } from '../keystone/keystone-client.js';
import { isJsonObject } from '../util/json-merge.js';
import { explodeDeployments } from './explode-deployments.js';
import { checkConfigured, sourceSession, withToken } from './keystone-source.js';
import { sourceErrorFromHttp } from './source-error.js';
import type { CollectContext, Collector, CollectResult } from './types.js';

// `heat`: the server resource's metadata from the Heat native API, with a Keystone v3 password login. Differences
// from upstream: the token is kept across polls until it nears expiry or Heat answers 401 (upstream logged in on
// every poll, B11), and every call has a timeout (B12). A stack_id without "/" is resolved by Heat itself, which
// redirects /stacks/<name-or-id>/... to the canonical /stacks/<name>/<id>/... URL.

/** What the heat collector keeps across polls: its Keystone session (and so its token). */
type HeatMemory = KeystoneMemory;

export const heatCollector: Collector<HeatMemory> = {
  name: 'heat',
  async collect(ctx: CollectContext<HeatMemory>): Promise<CollectResult> {
    const cfg = ctx.config.heat;
    checkConfigured(ctx.config, 'heat');
    const session = sourceSession(ctx, 'heat');
    const res = await withToken(ctx, 'heat', session, () =>
      fetchMetadata(ctx, session, cfg.stack_id!, cfg.resource_name!, cfg.region_name),
    );
    if (res.statusCode === 404) {
      throw new SourceUnavailableError(
        'heat',
        `Heat has no resource ${cfg.resource_name} in stack ${cfg.stack_id} (${res.redactedUrl} answered 404)`,
        { code: 'ERR_HTTP', statusCode: 404 },
      );
    }
    if (res.statusCode < 200 || res.statusCode > 299) {
      throw new SourceUnavailableError('heat', `Heat at ${res.redactedUrl} answered ${res.statusCode}`, {
        code: 'ERR_HTTP',
        statusCode: res.statusCode,
      });
    }
    let body: unknown;
    try {
      body = JSON.parse(res.body.toString('utf8'));
    } catch {
      throw new SourceUnavailableError('heat', `Heat at ${res.redactedUrl} returned a body that is not JSON`, {
        code: 'ERR_SOURCE_INVALID_DATA',
      });
    }
    const metadata = isJsonObject(body) ? body.metadata : undefined;
    if (!isJsonObject(metadata)) {
      throw new SourceUnavailableError('heat', `Heat at ${res.redactedUrl} returned no "metadata" object`, {
        code: 'ERR_SOURCE_INVALID_DATA',
      });
    }
    return { pairs: explodeDeployments('heat', metadata, ctx.config.DEFAULT.deployment_key, ctx.log) };
  },
};

async function fetchMetadata(
  ctx: CollectContext<HeatMemory>,
  session: KeystoneSession,
  stackId: string,
  resource: string,
  region: string | undefined,
): Promise<HttpResponse> {
  try {
    const token = await session.token(ctx.signal);
    const endpoint = findEndpoint(token.catalog, 'orchestration', region);
    const stackPath = stackId.split('/').map(encodeURIComponent).join('/');
    return await ctx.http.request({
      url: `${endpoint}/stacks/${stackPath}/resources/${encodeURIComponent(resource)}/metadata`,
      headers: { 'x-auth-token': token.token, accept: 'application/json' },
      timeoutSeconds: ctx.config.heat.timeout,
      signal: ctx.signal,
    });
  } catch (err) {
    throw sourceErrorFromHttp('heat', err) ?? err;
  }
}
