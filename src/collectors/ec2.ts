import path from 'node:path';
import { AgentError, SourceNotConfiguredError, SourceUnavailableError } from '../errors.js';
import type { HttpResponse } from '../http/types.js';
import { splitZone, withZone } from '../http/zoned-url.js';
import { redactUrl, setSecrets } from '../log/redact.js';
import { setOwnKey } from '../util/json-merge.js';
import { readJsonFile } from '../util/read-json-file.js';
import { readConfigDrive, type DriveRead } from './config-drive.js';
import { configuredUrls, orderByLastAnswer, rememberAnswer, type MetadataUrlMemory } from './metadata-urls.js';
import { sourceErrorFromHttp } from './source-error.js';
import type { CollectContext, Collector, CollectResult } from './types.js';

// `ec2`, in upstream's order: the cached <cachedir>/ec2.json (instance metadata does not change; upstream commit
// a950edb took this load off nova-api), then an OpenStack config drive (config-drive.ts), then the EC2-style
// metadata service at the first of the configured URLs that answers (metadata-urls.ts). The service's tree is walked
// as upstream does: a URL ending in "/" is a listing (one entry per line; "0=name" means "0/"), anything else a leaf
// returned as text. IMDSv2 is used when the service offers it: one PUT for a session token, sent with every GET; a
// service without it (OpenStack's) answers the PUT with an error and the walk continues without a token. Whatever
// is read becomes the `ec2` pair and is cached by the normal cache step. Differences from upstream: empty listing
// lines are skipped instead of crashing, entries that are not plain names are refused, the walk is bounded in depth
// and size, a drive without the ec2 file is read from its OpenStack file, and several URLs can be tried.

const TOKEN_TTL_SECONDS = 21600;
const MAX_DEPTH = 12;
const MAX_REQUESTS = 2000;
const SAFE_NAME = /^[A-Za-z0-9_.,:@+-]{1,255}$/;

/** What the ec2 collector keeps across polls: that blkid found no config drive, and which URL last answered. */
interface Ec2Memory extends MetadataUrlMemory {
  noConfigDrive: true;
}

export const ec2Collector: Collector<Ec2Memory> = {
  name: 'ec2',
  async collect(ctx: CollectContext<Ec2Memory>): Promise<CollectResult> {
    const cached = await readCached(ctx);
    if (cached !== undefined) return { pairs: [{ key: 'ec2', value: cached }] };

    // Nova attaches a config drive at boot, never later: once blkid has found none, later polls do not ask again.
    const drive: DriveRead = ctx.memory.noConfigDrive
      ? { kind: 'none' }
      : await readConfigDrive({
          paths: ctx.paths,
          log: ctx.log,
          timeoutMs: Math.max(1, Math.round(ctx.config.ec2.timeout * 1000)),
          maxBytes: ctx.config.agent.max_source_bytes,
          signal: ctx.signal,
        });
    if (drive.kind === 'none') ctx.memory.noConfigDrive = true;
    if (drive.kind === 'data') {
      ctx.log.info(
        { device: drive.device, file: drive.file, via: drive.via },
        'ec2 metadata read from the config drive',
      );
      return { pairs: [{ key: 'ec2', value: drive.value }] };
    }
    const driveNote =
      drive.kind === 'unusable'
        ? `config drive${drive.device ? ` ${drive.device}` : ''} unusable: ${drive.reason}`
        : undefined;

    const { urls, invalid } = configuredUrls(ctx.config);
    if (urls.length === 0) {
      if (driveNote)
        throw new SourceUnavailableError('ec2', `${driveNote}; no metadata service URL is configured`, {
          code: 'ERR_SOURCE_INVALID_DATA',
        });
      const why =
        invalid.length > 0
          ? `no usable metadata URL (${invalid.join('; ')})`
          : 'no config drive and no metadata service URL ([ec2] metadata_url is empty)';
      throw new SourceNotConfiguredError('ec2', why);
    }

    const stateDir = ctx.config.agent.state_dir;
    const failures: AgentError[] = [];
    for (const base of await orderByLastAnswer(urls, ctx.memory, stateDir, ctx.log)) {
      try {
        const token = await imdsToken(base, ctx);
        const tree = await new Walker(ctx, token).walk(`${base}/`, 0);
        await rememberAnswer(base, ctx.memory, stateDir, ctx.log);
        if (driveNote)
          ctx.log.warn(
            { device: deviceOf(drive), reason: driveNote },
            'config drive unusable; ec2 metadata read from the metadata service',
          );
        return { pairs: [{ key: 'ec2', value: tree }] };
      } catch (err) {
        if (!(err instanceof AgentError) || ctx.signal.aborted) throw err;
        failures.push(err);
        ctx.log.debug({ url: redactUrl(base), reason: err.message }, 'metadata URL did not answer; trying the next');
      }
    }
    throw allFailed(failures, driveNote, invalid);
  },
};

const SHARED_CODES = ['ERR_HTTP', 'ERR_HTTP_TOO_LARGE', 'ERR_SOURCE_INVALID_DATA', 'ERR_SOURCE_UNAVAILABLE'] as const;

function deviceOf(drive: DriveRead): string | undefined {
  return drive.kind === 'unusable' ? drive.device : undefined;
}

/** One error for the one log line: every URL's reason, and the drive's, with the code all URLs failed with, if one. */
function allFailed(
  failures: readonly AgentError[],
  driveNote: string | undefined,
  invalid: readonly string[],
): SourceUnavailableError {
  const codes = new Set(failures.map((f) => f.code));
  const [only] = codes;
  const code =
    codes.size === 1 ? (SHARED_CODES.find((c) => c === only) ?? 'ERR_SOURCE_UNAVAILABLE') : 'ERR_SOURCE_UNAVAILABLE';
  const parts =
    failures.length === 1
      ? [failures[0]!.message]
      : [`none of ${failures.length} metadata URLs answered: ${failures.map((f) => f.message).join('; ')}`];
  if (invalid.length > 0) parts.push(`skipped: ${invalid.join('; ')}`);
  if (driveNote) parts.unshift(driveNote);
  return new SourceUnavailableError('ec2', parts.join('; '), { code, cause: failures[failures.length - 1] });
}

/** <cachedir>/ec2.json when it holds truthy JSON (upstream: `if content: return content`). */
async function readCached(ctx: CollectContext): Promise<unknown> {
  const file = path.join(ctx.config.DEFAULT.cachedir, 'ec2.json');
  const read = await readJsonFile(file, ctx.config.agent.max_source_bytes);
  if (!read.ok) {
    if (read.reason !== 'missing')
      ctx.log.warn(
        { file, reason: read.reason, detail: read.detail },
        'cached ec2 metadata unusable; fetching it again',
      );
    return undefined;
  }
  const v = read.value;
  const empty =
    v === null ||
    v === false ||
    v === 0 ||
    v === '' ||
    (Array.isArray(v) && v.length === 0) ||
    (typeof v === 'object' && v !== null && Object.keys(v).length === 0);
  return empty ? undefined : v;
}

/** The IMDSv2 token URL: <service root>/latest/api/token, the service root being what precedes /latest. */
export function tokenUrl(base: string): string {
  const zoned = splitZone(base);
  const u = new URL(zoned.url);
  const at = u.pathname.indexOf('/latest');
  const prefix = at === -1 ? '' : u.pathname.slice(0, at);
  const plain = `${u.origin}${prefix}/latest/api/token`;
  return zoned.zone !== undefined && zoned.address !== undefined ? withZone(plain, zoned.address, zoned.zone) : plain;
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
  // One IMDSv2 session token at a time: each walk's replaces the last one's.
  setSecrets('collector-ec2-imds-token', [token]);
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
      throw new SourceUnavailableError('ec2', `the metadata tree has more than ${MAX_REQUESTS} entries; refused`, {
        code: 'ERR_SOURCE_INVALID_DATA',
      });
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
      throw new SourceUnavailableError(
        'ec2',
        `metadata service answered ${res.statusCode} for ${res.redactedUrl}; no partial result is used`,
        { code: 'ERR_HTTP', statusCode: res.statusCode },
      );
    }
    return res.body.toString('utf8');
  }

  async walk(url: string, depth: number): Promise<Record<string, unknown>> {
    if (depth > MAX_DEPTH)
      throw new SourceUnavailableError('ec2', `the metadata tree is nested deeper than ${MAX_DEPTH} levels; refused`, {
        code: 'ERR_SOURCE_INVALID_DATA',
      });
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
        throw new SourceUnavailableError('ec2', `metadata listing at ${redactUrl(url)} has an unusable entry`, {
          code: 'ERR_SOURCE_INVALID_DATA',
        });
      }
      const isDir = line.endsWith('/');
      const childUrl = `${url}${encodeURIComponent(key)}${isDir ? '/' : ''}`;
      const value = isDir ? await this.walk(childUrl, depth + 1) : await this.get(childUrl);
      // A listing entry named "__proto__" is data, not a prototype change.
      setOwnKey(out, key, value);
    }
    return out;
  }
}

function unavailable(err: unknown, what: string): SourceUnavailableError {
  return (
    sourceErrorFromHttp('ec2', err) ??
    new SourceUnavailableError(
      'ec2',
      `request to ${what} failed: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    )
  );
}
