import { createHash } from 'node:crypto';
import { AgentError } from '../errors.js';
import { registerSecret } from '../log/redact.js';
import type { HttpClient } from '../http/types.js';

// Keystone v3 password authentication shared by the heat and zaqar collectors and the HEAT/ZAQAR signal transports.
// Tokens are cached in memory until shortly before they expire (upstream re-authenticated on every poll, B11) and
// dropped by invalidate() when a service answers 401.

export interface KeystoneCredentials {
  readonly authUrl: string;
  readonly userId: string;
  readonly password: string;
  readonly projectId: string;
}

export interface CatalogEndpoint {
  readonly interface: string;
  readonly region?: string;
  readonly region_id?: string;
  readonly url: string;
}

export interface CatalogEntry {
  readonly type: string;
  readonly endpoints: readonly CatalogEndpoint[];
}

export interface KeystoneToken {
  readonly token: string;
  readonly expiresAt: number;
  readonly catalog: readonly CatalogEntry[];
}

export class KeystoneError extends AgentError {
  override name = 'KeystoneError';
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_HTTP', message, options);
  }
}

/** Keystone URL with a /v3 suffix: upstream replaced /v2.0 with /v3 when discovery failed; we always use v3. */
export function v3Url(authUrl: string): string {
  const trimmed = authUrl.replace(/\/+$/, '');
  if (/\/v3$/.test(trimmed)) return trimmed;
  if (/\/v2\.0$/.test(trimmed)) return trimmed.replace(/\/v2\.0$/, '/v3');
  return `${trimmed}/v3`;
}

const EXPIRY_MARGIN_MS = 60_000;
const DEFAULT_LIFETIME_MS = 3600_000;

export class KeystoneSession {
  private cached: KeystoneToken | undefined;
  private inflight: Promise<KeystoneToken> | undefined;

  constructor(
    private readonly http: HttpClient,
    private readonly creds: KeystoneCredentials,
    private readonly options: { timeoutSeconds: number; caFile?: string; insecure?: boolean; now?: () => number } = { timeoutSeconds: 10 },
  ) {
    registerSecret(creds.password);
  }

  /** A valid token, from cache when it has more than a minute left. Concurrent callers share one login. */
  async token(signal?: AbortSignal): Promise<KeystoneToken> {
    const now = (this.options.now ?? Date.now)();
    if (this.cached && this.cached.expiresAt - EXPIRY_MARGIN_MS > now) return this.cached;
    this.inflight ??= this.authenticate(signal).finally(() => {
      this.inflight = undefined;
    });
    this.cached = await this.inflight;
    return this.cached;
  }

  /** Forget the cached token (after a 401). */
  invalidate(): void {
    this.cached = undefined;
  }

  private async authenticate(signal?: AbortSignal): Promise<KeystoneToken> {
    const url = `${v3Url(this.creds.authUrl)}/auth/tokens`;
    const body = JSON.stringify({
      auth: {
        identity: { methods: ['password'], password: { user: { id: this.creds.userId, password: this.creds.password } } },
        scope: { project: { id: this.creds.projectId } },
      },
    });
    let res;
    try {
      res = await this.http.request({
        url,
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body,
        timeoutSeconds: this.options.timeoutSeconds,
        ...(this.options.caFile ? { caFile: this.options.caFile } : {}),
        ...(this.options.insecure ? { insecure: true } : {}),
        ...(signal ? { signal } : {}),
      });
    } catch (err) {
      throw new KeystoneError(`Keystone authentication failed: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
    if (res.statusCode === 401 || res.statusCode === 403) {
      throw new KeystoneError(`Keystone at ${res.redactedUrl} refused the credentials (${res.statusCode}); check user_id, password and project_id`);
    }
    if (res.statusCode !== 201 && res.statusCode !== 200) {
      throw new KeystoneError(`Keystone authentication at ${res.redactedUrl} answered ${res.statusCode}; check auth_url`);
    }
    const header = res.headers['x-subject-token'];
    const token = Array.isArray(header) ? header[0] : header;
    if (!token) throw new KeystoneError(`Keystone at ${res.redactedUrl} returned no X-Subject-Token`);
    registerSecret(token);
    let parsed: unknown;
    try {
      parsed = JSON.parse(res.body.toString('utf8'));
    } catch (err) {
      throw new KeystoneError(`Keystone at ${res.redactedUrl} returned a body that is not JSON`, { cause: err });
    }
    const tok = isObject(parsed) && isObject(parsed.token) ? parsed.token : undefined;
    if (!tok) throw new KeystoneError(`Keystone at ${res.redactedUrl} returned no "token" object`);
    const now = (this.options.now ?? Date.now)();
    const expires = typeof tok.expires_at === 'string' ? Date.parse(tok.expires_at) : NaN;
    const expiresAt = Number.isFinite(expires) ? expires : now + DEFAULT_LIFETIME_MS;
    return { token, expiresAt, catalog: validCatalog(tok.catalog) };
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Catalog entries of the expected shape; anything else is dropped (a missing service is reported by findEndpoint). */
function validCatalog(value: unknown): CatalogEntry[] {
  if (!Array.isArray(value)) return [];
  const out: CatalogEntry[] = [];
  for (const entry of value) {
    if (!isObject(entry) || typeof entry.type !== 'string' || !Array.isArray(entry.endpoints)) continue;
    const endpoints: CatalogEndpoint[] = [];
    for (const ep of entry.endpoints) {
      if (!isObject(ep) || typeof ep.url !== 'string' || typeof ep.interface !== 'string') continue;
      endpoints.push({
        interface: ep.interface,
        url: ep.url,
        ...(typeof ep.region === 'string' ? { region: ep.region } : {}),
        ...(typeof ep.region_id === 'string' ? { region_id: ep.region_id } : {}),
      });
    }
    out.push({ type: entry.type, endpoints });
  }
  return out;
}

/**
 * Endpoint URL of a service from the catalog: type, interface public (upstream "publicURL"), and region when one is
 * given. A region of "null" or "None" (Heat rendered `region_name: null` into configs) counts as no region.
 */
export function findEndpoint(catalog: readonly CatalogEntry[], type: string, region?: string): string {
  const wantRegion = region && region !== 'null' && region !== 'None' ? region : undefined;
  for (const entry of catalog) {
    if (entry.type !== type) continue;
    for (const ep of entry.endpoints) {
      if (ep.interface !== 'public') continue;
      if (wantRegion && ep.region !== wantRegion && ep.region_id !== wantRegion) continue;
      return ep.url.replace(/\/+$/, '');
    }
  }
  throw new KeystoneError(`no public "${type}" endpoint${wantRegion ? ` in region ${wantRegion}` : ''} in the Keystone catalog`);
}

/**
 * A session kept in a collector's memory across polls, so its token is reused until it nears expiry. A new session
 * is made when the credentials, options or HTTP client (rebuilt on reload) change.
 */
export function rememberedSession(
  memory: Map<string, unknown>,
  http: HttpClient,
  creds: KeystoneCredentials,
  options: { timeoutSeconds: number; caFile?: string; insecure?: boolean; now?: () => number },
): KeystoneSession {
  const fingerprint = createHash('sha256')
    .update(JSON.stringify([creds.authUrl, creds.userId, creds.password, creds.projectId, options.timeoutSeconds, options.caFile ?? '', options.insecure ?? false]))
    .digest('hex');
  const kept = memory.get(SESSION_KEY) as { fingerprint: string; http: HttpClient; session: KeystoneSession } | undefined;
  if (kept?.fingerprint === fingerprint && kept.http === http) return kept.session;
  const session = new KeystoneSession(http, creds, options);
  memory.set(SESSION_KEY, { fingerprint, http, session });
  return session;
}

const SESSION_KEY = 'keystone-session';
