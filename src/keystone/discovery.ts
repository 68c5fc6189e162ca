import type { HttpClient, HttpResponse } from '../http/types.js';
import type { Logger } from '../log/logger.js';
import { redactUrl } from '../log/redact.js';
import { isObject } from './catalog.js';
import { KeystoneError } from './keystone-error.js';

// Identity version discovery, as keystoneauth's Discover does it: GET the unversioned auth_url (Accept JSON), read
// the version list (`versions.values`, a bare `versions` list, or a single `version`), keep the entries whose status
// is usable (stable/current/supported, or deprecated; experimental and unknown are skipped), take the highest 3.x and
// follow its `rel=self` link. An auth_url already naming a version skips all this, as it did before discovery existed:
// /v3 is used as it is and /v2.0 becomes /v3 (the agent speaks v3 only, as upstream's fallback did).
// Results are kept in memory per auth_url for the life of the process, so a poll never repeats the GET.

export interface DiscoveryOptions {
  readonly timeoutSeconds: number;
  readonly caFile?: string;
  readonly insecure?: boolean;
  readonly signal?: AbortSignal;
  readonly log?: Logger;
}

const USABLE_STATUSES = new Set(['stable', 'current', 'supported', 'deprecated']);
// A version document is a few hundred bytes; anything near this is not one.
const MAX_DOCUMENT_BYTES = 256 * 1024;
// Distinct auth_urls a process meets: the collector's, and the signal transports' (usually the same one).
const MAX_REMEMBERED = 32;

const discovered = new Map<string, string>();
const pending = new Map<string, Promise<string>>();

/** The v3 endpoint of an auth_url that names its version (/v3 kept, /v2.0 replaced); undefined when unversioned. */
export function versionedV3Url(authUrl: string): string | undefined {
  const trimmed = trimSlashes(authUrl);
  if (/\/v3$/.test(trimmed)) return trimmed;
  if (/\/v2\.0$/.test(trimmed)) return trimmed.replace(/\/v2\.0$/, '/v3');
  return undefined;
}

/** The Identity v3 endpoint (no trailing slash) for an auth_url: as named, or discovered once per process. */
export async function identityV3Url(http: HttpClient, authUrl: string, options: DiscoveryOptions): Promise<string> {
  const named = versionedV3Url(authUrl);
  if (named !== undefined) return named;
  const key = trimSlashes(authUrl);
  const known = discovered.get(key);
  if (known !== undefined) return known;
  let running = pending.get(key);
  if (!running) {
    running = discover(http, authUrl, options)
      .then((url) => {
        if (discovered.size >= MAX_REMEMBERED) discovered.delete(discovered.keys().next().value as string);
        discovered.set(key, url);
        return url;
      })
      .finally(() => pending.delete(key));
    pending.set(key, running);
  }
  return running;
}

/** Forget what discovery found for an auth_url (its v3 endpoint answered 404: Keystone moved). */
export function forgetDiscovery(authUrl: string): void {
  discovered.delete(trimSlashes(authUrl));
}

async function discover(http: HttpClient, authUrl: string, options: DiscoveryOptions): Promise<string> {
  const shown = redactUrl(authUrl);
  let res: HttpResponse;
  try {
    res = await http.request({
      url: authUrl,
      headers: { accept: 'application/json' },
      timeoutSeconds: options.timeoutSeconds,
      maxBytes: MAX_DOCUMENT_BYTES,
      ...(options.caFile ? { caFile: options.caFile } : {}),
      ...(options.insecure ? { insecure: true } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
  } catch (err) {
    throw new KeystoneError(
      `Keystone version discovery at ${shown} failed: ${err instanceof Error ? err.message : String(err)}; check auth_url`,
      { cause: err },
    );
  }
  // A server error says nothing about the document: try again next time rather than guess.
  if (res.statusCode >= 500) {
    throw new KeystoneError(
      `Keystone version discovery at ${res.redactedUrl} answered ${res.statusCode}; check auth_url, or set it to the v3 endpoint (ending in /v3)`,
      { statusCode: res.statusCode },
    );
  }
  const versions = res.statusCode === 200 || res.statusCode === 300 ? versionList(res.body) : undefined;
  if (versions === undefined) {
    // Not a version document (a proxy that forwards /v3 only, an HTML page): the agent's behaviour before discovery.
    const fallback = `${trimSlashes(authUrl)}/v3`;
    options.log?.warn(
      { url: res.redactedUrl, httpStatus: res.statusCode, using: redactUrl(fallback) },
      'no Keystone version document at auth_url; appending /v3',
    );
    return fallback;
  }
  const chosen = highestV3(versions, res.redactedUrl);
  if (!chosen) {
    const offered = versions.map(describeVersion).filter(Boolean).join(', ') || 'none';
    throw new KeystoneError(
      `the Keystone version document at ${res.redactedUrl} offers no usable Identity v3 (versions: ${offered}); set auth_url to Keystone's v3 endpoint, for example ${redactUrl(trimSlashes(authUrl))}/v3`,
    );
  }
  options.log?.debug(
    { url: res.redactedUrl, version: chosen.id, endpoint: redactUrl(chosen.url) },
    'Keystone version discovered',
  );
  return chosen.url;
}

/** The entries of a version document, or undefined when the body is not one. */
function versionList(body: Buffer): unknown[] | undefined {
  let doc: unknown;
  try {
    doc = JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
  if (!isObject(doc)) return undefined;
  const versions = doc.versions;
  if (isObject(versions) && Array.isArray(versions.values)) return versions.values as unknown[];
  if (Array.isArray(versions)) return versions as unknown[];
  if (isObject(doc.version)) return [doc.version];
  return undefined;
}

interface Candidate {
  readonly id: string;
  readonly minor: number;
  readonly url: string;
}

function highestV3(versions: readonly unknown[], base: string): Candidate | undefined {
  let best: Candidate | undefined;
  for (const v of versions) {
    if (!isObject(v) || typeof v.status !== 'string' || !USABLE_STATUSES.has(v.status.toLowerCase())) continue;
    const number = typeof v.id === 'string' ? /^v?(\d+)(?:\.(\d+))?/.exec(v.id) : null;
    if (!number || number[1] !== '3') continue;
    const url = selfLink(v.links, base);
    if (url === undefined) continue;
    const minor = Number(number[2] ?? 0);
    if (!best || minor > best.minor) best = { id: v.id as string, minor, url };
  }
  return best;
}

/** The absolute http(s) URL of a version's rel=self link (relative links resolved against the document's URL). */
function selfLink(links: unknown, base: string): string | undefined {
  if (!Array.isArray(links)) return undefined;
  for (const link of links) {
    if (
      !isObject(link) ||
      typeof link.rel !== 'string' ||
      link.rel.toLowerCase() !== 'self' ||
      typeof link.href !== 'string'
    )
      continue;
    let url: URL;
    try {
      url = new URL(link.href, base);
    } catch {
      return undefined;
    }
    return url.protocol === 'http:' || url.protocol === 'https:' ? trimSlashes(url.toString()) : undefined;
  }
  return undefined;
}

function describeVersion(v: unknown): string {
  if (!isObject(v) || typeof v.id !== 'string') return '';
  return typeof v.status === 'string' ? `${v.id.slice(0, 20)} (${v.status.slice(0, 20)})` : v.id.slice(0, 20);
}

function trimSlashes(url: string): string {
  return url.replace(/\/+$/, '');
}
