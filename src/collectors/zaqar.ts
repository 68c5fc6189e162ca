import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { SourceNotConfiguredError, SourceUnavailableError } from '../errors.js';
import type { HttpResponse } from '../http/types.js';
import { findEndpoint, type KeystoneMemory, type KeystoneSession } from '../keystone/keystone-client.js';
import { isJsonObject, type JsonObject } from '../util/json-merge.js';
import { readJsonFile } from '../util/read-json-file.js';
import { explodeDeployments } from './explode-deployments.js';
import { messageBody } from './zaqar-message.js';
import { checkConfigured, sourceSession, withToken } from './keystone-source.js';
import { sourceErrorFromHttp } from './source-error.js';
import { closeWebsocket, popOverWebsocket, type ZaqarWebsocketMemory } from './zaqar-websocket.js';
import type { CollectContext, Collector, CollectResult } from './types.js';

// `zaqar`: Heat posts the whole server metadata to a Zaqar queue on every change (ZAQAR_MESSAGE); each poll pops
// (reads and deletes) one message, as upstream does with the v2 HTTP API. The Keystone token is kept across polls
// (upstream logged in every poll, B11) and calls have timeouts (B12). TLS to Zaqar is verified only with
// ssl_certificate_validation = true, upstream's default; Keystone is always verified.
// Difference from upstream: an empty queue is the normal state between changes, so it yields the last document seen
// (from memory, else from <cachedir>/zaqar.json) marked unchanged, instead of "unavailable" dropping the source's
// files from OS_CONFIG_FILES (B13). With use_websockets = true the pop goes over Zaqar's websocket API instead
// (zaqar-websocket.ts); everything around it is shared.

/** What the zaqar collector keeps across polls: its Keystone session, its Client-ID, the last document popped. */
interface ZaqarMemory extends KeystoneMemory, ZaqarWebsocketMemory {
  clientId: string;
  lastDocument: JsonObject;
}

export const zaqarCollector: Collector<ZaqarMemory> = {
  name: 'zaqar',
  async collect(ctx: CollectContext<ZaqarMemory>): Promise<CollectResult> {
    const cfg = ctx.config.zaqar;
    checkConfigured(ctx.config, 'zaqar');
    if (cfg.ssl_certificate_validation && !cfg.ca_file)
      throw new SourceNotConfiguredError('zaqar', '[zaqar] ssl_certificate_validation needs ca_file');
    const session = sourceSession(ctx, 'zaqar');
    if (cfg.use_websockets) {
      const body = await popOverWebsocket(ctx, session);
      if (!body) return lastDocument(ctx);
      return latestDocument(ctx, body);
    }
    closeWebsocket(ctx.memory);
    const res = await withToken(ctx, 'zaqar', session, () => pop(ctx, session));
    if (res.statusCode === 204) return lastDocument(ctx);
    if (res.statusCode < 200 || res.statusCode > 299) {
      throw new SourceUnavailableError('zaqar', `Zaqar at ${res.redactedUrl} answered ${res.statusCode}`, {
        code: 'ERR_HTTP',
        statusCode: res.statusCode,
      });
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(res.body.toString('utf8'));
    } catch {
      throw new SourceUnavailableError('zaqar', `Zaqar at ${res.redactedUrl} returned a body that is not JSON`, {
        code: 'ERR_SOURCE_INVALID_DATA',
      });
    }
    const messages = isJsonObject(parsed) ? parsed.messages : undefined;
    if (!Array.isArray(messages))
      throw new SourceUnavailableError('zaqar', `Zaqar at ${res.redactedUrl} returned no "messages" list`, {
        code: 'ERR_SOURCE_INVALID_DATA',
      });
    if (messages.length === 0) return lastDocument(ctx);
    return latestDocument(ctx, messageBody(messages[0]));
  },
};

/** A message arrived: it is the metadata now. */
function latestDocument(ctx: CollectContext<ZaqarMemory>, body: JsonObject): CollectResult {
  ctx.memory.lastDocument = body;
  return { pairs: explodeDeployments('zaqar', body, ctx.config.DEFAULT.deployment_key, ctx.log) };
}

async function pop(ctx: CollectContext<ZaqarMemory>, session: KeystoneSession): Promise<HttpResponse> {
  const cfg = ctx.config.zaqar;
  try {
    const token = await session.token(ctx.signal);
    const endpoint = findEndpoint(token.catalog, 'messaging', cfg.region_name);
    const clientId = (ctx.memory.clientId ??= randomUUID());
    return await ctx.http.request({
      url: `${endpoint}/v2/queues/${encodeURIComponent(cfg.queue_id!)}/messages?pop=1`,
      method: 'DELETE',
      headers: {
        'x-auth-token': token.token,
        'x-project-id': cfg.project_id!,
        'client-id': clientId,
        accept: 'application/json',
      },
      timeoutSeconds: cfg.timeout,
      signal: ctx.signal,
      // A retried DELETE could pop a second message and lose the first.
      retries: 0,
      ...(cfg.ssl_certificate_validation ? { caFile: cfg.ca_file! } : { insecure: true }),
    });
  } catch (err) {
    throw sourceErrorFromHttp('zaqar', err) ?? err;
  }
}

/** The queue is empty: the metadata has not changed since the last message. */
async function lastDocument(ctx: CollectContext<ZaqarMemory>): Promise<CollectResult> {
  let doc = ctx.memory.lastDocument;
  if (!doc) {
    const file = path.join(ctx.config.DEFAULT.cachedir, 'zaqar.json');
    const read = await readJsonFile(file, ctx.config.agent.max_source_bytes);
    if (read.ok && isJsonObject(read.value)) doc = read.value;
  }
  if (!doc)
    throw new SourceUnavailableError(
      'zaqar',
      `queue ${ctx.config.zaqar.queue_id} is empty and no earlier message is known`,
    );
  ctx.memory.lastDocument = doc;
  ctx.log.debug('queue empty; keeping the last metadata');
  return { pairs: explodeDeployments('zaqar', doc, ctx.config.DEFAULT.deployment_key, ctx.log), unchanged: true };
}
