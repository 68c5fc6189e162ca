import { SourceNotConfiguredError, SourceUnavailableError } from '../errors.js';
import type { HttpResponse } from '../http/types.js';
import { redactUrl } from '../log/redact.js';
import { isJsonObject } from '../util/json-merge.js';
import { explodeDeployments } from './explode-deployments.js';
import { sourceErrorFromHttp } from './source-error.js';
import type { CollectContext, CollectedPair, Collector, CollectResult } from './types.js';
import { parsePythonJson } from '../util/python-json-parse.js';

// `request`: one JSON document from any URL, typically a Swift TempURL that Heat rewrites on every metadata change
// (POLL_TEMP_URL). Upstream did HEAD + full GET on every poll, its Last-Modified check being dead code (B10); here
// one conditional GET (If-None-Match / If-Modified-Since from the previous answer) is sent, and a 304 returns the
// previous pairs untouched: no parsing, no cache write, no command run. Differences from upstream: an unset
// metadata_url is "not configured" (quiet) rather than a warning every poll; a non-object body or a malformed
// Last-Modified is reported instead of killing the daemon (B8).

interface Remembered {
  url: string;
  etag?: string;
  lastModified?: string;
  pairs: readonly CollectedPair[];
}

/** What the request collector keeps across polls: the validators of the last answer, for a conditional GET. */
interface RequestMemory {
  conditional: Remembered;
}

export const requestCollector: Collector<RequestMemory> = {
  name: 'request',
  async collect(ctx: CollectContext<RequestMemory>): Promise<CollectResult> {
    const url = ctx.config.request.metadata_url;
    if (!url) throw new SourceNotConfiguredError('request', 'no [request] metadata_url');
    const shown = redactUrl(url);
    try {
      new URL(url);
    } catch {
      throw new SourceNotConfiguredError('request', `[request] metadata_url ${shown} is not a URL`);
    }
    // The validators belong to one URL; a new TempURL starts over.
    const previous = ctx.memory.conditional;
    const known = previous?.url === url ? previous : undefined;
    const headers: Record<string, string> = { accept: 'application/json' };
    if (known?.etag) headers['if-none-match'] = known.etag;
    if (known?.lastModified) headers['if-modified-since'] = known.lastModified;

    let res: HttpResponse;
    try {
      res = await ctx.http.request({ url, headers, timeoutSeconds: ctx.config.request.timeout, signal: ctx.signal });
    } catch (err) {
      throw sourceErrorFromHttp('request', err) ?? err;
    }
    if (res.statusCode === 304) {
      if (!known)
        throw new SourceUnavailableError('request', `${shown} answered 304 Not Modified to an unconditional request`, {
          code: 'ERR_HTTP',
          statusCode: 304,
        });
      ctx.log.debug('metadata not modified');
      return { pairs: known.pairs, unchanged: true };
    }
    if (res.statusCode === 401 || res.statusCode === 403) {
      throw new SourceUnavailableError(
        'request',
        `${shown} refused the request (${res.statusCode}); a TempURL may have expired or its key changed`,
        { code: 'ERR_HTTP', statusCode: res.statusCode },
      );
    }
    if (res.statusCode < 200 || res.statusCode > 299) {
      throw new SourceUnavailableError('request', `${shown} answered ${res.statusCode}`, {
        code: 'ERR_HTTP',
        statusCode: res.statusCode,
      });
    }
    let doc: unknown;
    try {
      doc = parsePythonJson(res.body.toString('utf8'));
    } catch {
      throw new SourceUnavailableError('request', `${shown} did not return valid JSON`, {
        code: 'ERR_SOURCE_INVALID_DATA',
      });
    }
    if (!isJsonObject(doc))
      throw new SourceUnavailableError('request', `${shown} returned JSON that is not an object`, {
        code: 'ERR_SOURCE_INVALID_DATA',
      });
    const pairs = explodeDeployments('request', doc, ctx.config.DEFAULT.deployment_key, ctx.log);
    const etag = header(res, 'etag');
    const lastModified = validHttpDate(header(res, 'last-modified'), ctx);
    ctx.memory.conditional = { url, pairs, ...(etag ? { etag } : {}), ...(lastModified ? { lastModified } : {}) };
    return { pairs };
  },
};

function header(res: HttpResponse, name: string): string | undefined {
  const v = res.headers[name];
  const s = Array.isArray(v) ? v[0] : v;
  return s && s.length <= 200 ? s : undefined;
}

/** A Last-Modified worth echoing back; a malformed one is ignored (upstream crashed on it, B8). */
function validHttpDate(value: string | undefined, ctx: CollectContext<RequestMemory>): string | undefined {
  if (!value) return undefined;
  if (Number.isNaN(Date.parse(value))) {
    ctx.log.warn({ lastModified: value.slice(0, 60) }, 'ignoring a malformed Last-Modified header');
    return undefined;
  }
  return value;
}
