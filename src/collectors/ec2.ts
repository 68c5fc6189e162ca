import path from 'node:path';
import { SourceNotConfiguredError, SourceUnavailableError } from '../errors.js';
import { HttpError } from '../http/http-error.js';
import type { HttpResponse } from '../http/types.js';
import { redactUrl, registerSecret } from '../log/redact.js';
import { readJsonFile } from '../util/read-json-file.js';
import type { CollectContext, Collector, CollectResult } from './types.js';

// `ec2`: the EC2-style metadata service, walked as upstream does. A URL ending in "/" is a listing (one entry per
// line; "0=name" means "0/"), anything else is a leaf returned as text. The result is cached as <cachedir>/ec2.json
// by the normal cache step, and a cached copy is used without touching the network: instance metadata does not change
// (upstream commit a950edb, which took this load off nova-api). IMDSv2 is used when the service offers it: one PUT for
// a session token, sent with every GET; a service without it (OpenStack's) answers the PUT with an error and the walk
// continues without a token. Differences from upstream: empty listing lines are skipped instead of crashing, entries
// that are not plain names are refused, and the walk is bounded in depth and size.

const TOKEN_TTL_SECONDS = 21600;
const MAX_DEPTH = 12;
const MAX_REQUESTS = 2000;
const SAFE_NAME = /^[A-Za-z0-9_.,:@+-]{1,255}$/;

export const ec2Collector: Collector = {
  name: 'ec2',
  async collect(ctx: CollectContext): Promise<CollectResult> {
    const cached = await readCached(ctx);
    if (cached !== undefined) return { pairs: [{ key: 'ec2', value: cached }] };
    const base = ctx.config.ec2.metadata_url.replace(/\/+$/, '');
    if (!base) throw new SourceNotConfiguredError('ec2', 'no [ec2] metadata_url');
    try {
      new URL(base);
    } catch {
      throw new SourceNotConfiguredError('ec2', `[ec2] metadata_url ${redactUrl(base)} is not a URL`);
    }
    const token = await imdsToken(base, ctx);
    const walker = new Walker(ctx, token);
    const tree = await walker.walk(`${base}/`, 0);
    return { pairs: [{ key: 'ec2', value: tree }] };
  },
};

/** <cachedir>/ec2.json when it holds truthy JSON (upstream: `if content: return content`). */
async function readCached(ctx: CollectContext): Promise<unknown> {
  const file = path.join(ctx.config.DEFAULT.cachedir, 'ec2.json');
  const read = await readJsonFile(file, ctx.config.agent.max_source_bytes);
  if (!read.ok) {
    if (read.reason !== 'missing') ctx.log.warn({ file, reason: read.reason, detail: read.detail }, 'cached ec2 metadata unusable; fetching it again');
    return undefined;
  }
  const v = read.value;
  const empty = v === null || v === false || v === 0 || v === '' || (Array.isArray(v) && v.length === 0) || (typeof v === 'object' && v !== null && Object.keys(v).length === 0);
  return empty ? undefined : v;
}

/** The IMDSv2 token URL: <service root>/latest/api/token, the service root being what precedes /latest. */
export function tokenUrl(base: string): string {
  const u = new URL(base);
  const at = u.pathname.indexOf('/latest');
  const prefix = at === -1 ? '' : u.pathname.slice(0, at);
  return `${u.origin}${prefix}/latest/api/token`;
}

async function imdsToken(base: string, ctx: CollectContext): Promise<string | undefined> {
  const url = tokenUrl(base);
  let res: HttpResponse;
  try {
    res = await ctx.http.request({
      url,
      method: 'PUT',
      headers: { 'x-aws-ec2-metadata-token-ttl-seconds': String(TOKEN_TTL_SECONDS) },
      timeoutSeconds: ctx.config.ec2.timeout,
      signal: ctx.signal,
    });
  } catch (err) {
    // The service is not reachable at all: the walk would fail the same way, after another timeout.
    throw unavailable(err, 'the metadata service');
  }
  const token = res.body.toString('utf8').trim();
  if (res.statusCode !== 200 || token === '' || /\s/.test(token)) {
    ctx.log.debug({ status: res.statusCode }, 'metadata service offers no IMDSv2 token; using IMDSv1');
    return undefined;
  }
  registerSecret(token);
  return token;
}

class Walker {
  private requests = 0;
  constructor(
    private readonly ctx: CollectContext,
    private readonly token: string | undefined,
  ) {}

  private async get(url: string): Promise<string> {
    if (++this.requests > MAX_REQUESTS) {
      throw new SourceUnavailableError('ec2', `the metadata tree has more than ${MAX_REQUESTS} entries; refused`, { code: 'ERR_SOURCE_INVALID_DATA' });
    }
    let res: HttpResponse;
    try {
      res = await this.ctx.http.request({
        url,
        timeoutSeconds: this.ctx.config.ec2.timeout,
        signal: this.ctx.signal,
        ...(this.token ? { headers: { 'x-aws-ec2-metadata-token': this.token } } : {}),
      });
    } catch (err) {
      throw unavailable(err, redactUrl(url));
    }
    if (res.statusCode !== 200) {
      throw new SourceUnavailableError('ec2', `metadata service answered ${res.statusCode} for ${res.redactedUrl}; no partial result is used`, { code: 'ERR_HTTP' });
    }
    return res.body.toString('utf8');
  }

  async walk(url: string, depth: number): Promise<Record<string, unknown>> {
    if (depth > MAX_DEPTH) throw new SourceUnavailableError('ec2', `the metadata tree is nested deeper than ${MAX_DEPTH} levels; refused`, { code: 'ERR_SOURCE_INVALID_DATA' });
    const listing = await this.get(url);
    const out: Record<string, unknown> = {};
    for (const raw of listing.split('\n')) {
      let line = raw.trim();
      if (line === '') continue;
      // "0=my-key" under public-keys/ names the directory "0/".
      const eq = line.indexOf('=');
      if (eq !== -1) line = `${line.slice(0, eq)}/`;
      const key = line.endsWith('/') ? line.slice(0, -1) : line;
      // Real names are short tokens ("ami-id", "0", role names); anything else (an HTML error page, "..") is refused.
      if (!SAFE_NAME.test(key) || key === '.' || key === '..') {
        throw new SourceUnavailableError('ec2', `metadata listing at ${redactUrl(url)} has an unusable entry`, { code: 'ERR_SOURCE_INVALID_DATA' });
      }
      const isDir = line.endsWith('/');
      const childUrl = `${url}${encodeURIComponent(key)}${isDir ? '/' : ''}`;
      const value = isDir ? await this.walk(childUrl, depth + 1) : await this.get(childUrl);
      // defineProperty: a listing entry named "__proto__" is data, not a prototype change.
      Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
    }
    return out;
  }
}

function unavailable(err: unknown, what: string): SourceUnavailableError {
  if (err instanceof HttpError) return new SourceUnavailableError('ec2', err.message, { code: err.code === 'ERR_HTTP_TOO_LARGE' ? 'ERR_HTTP_TOO_LARGE' : 'ERR_HTTP', cause: err });
  return new SourceUnavailableError('ec2', `request to ${what} failed: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
}
