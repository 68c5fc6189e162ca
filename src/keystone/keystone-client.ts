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

export class KeystoneSession {
  private cached: KeystoneToken | undefined;

  constructor(
    private readonly http: HttpClient,
    private readonly creds: KeystoneCredentials,
    private readonly options: { timeoutSeconds: number; caFile?: string; insecure?: boolean; now?: () => number } = { timeoutSeconds: 10 },
  ) {
    registerSecret(creds.password);
  }

  /** A valid token, from cache when it has more than a minute left. */
  async token(signal?: AbortSignal): Promise<KeystoneToken> {
    const now = (this.options.now ?? Date.now)();
    if (this.cached && this.cached.expiresAt - EXPIRY_MARGIN_MS > now) return this.cached;
    this.cached = await this.authenticate(signal);
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
    const res = await this.http.request({
      url,
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body,
      timeoutSeconds: this.options.timeoutSeconds,
      ...(this.options.caFile ? { caFile: this.options.caFile } : {}),
      ...(this.options.insecure ? { insecure: true } : {}),
      ...(signal ? { signal } : {}),
    });
    if (res.statusCode !== 201 && res.statusCode !== 200) {
      throw new KeystoneError(`Keystone authentication at ${res.redactedUrl} answered ${res.statusCode}; check user_id, password and project_id`);
    }
    const header = res.headers['x-subject-token'];
    const token = Array.isArray(header) ? header[0] : header;
    if (!token) throw new KeystoneError(`Keystone at ${res.redactedUrl} returned no X-Subject-Token`);
    registerSecret(token);
    let parsed: { token?: { expires_at?: string; catalog?: CatalogEntry[] } };
    try {
      parsed = JSON.parse(res.body.toString('utf8')) as typeof parsed;
    } catch (err) {
      throw new KeystoneError(`Keystone at ${res.redactedUrl} returned a body that is not JSON`, { cause: err });
    }
    const expiresAt = Date.parse(parsed.token?.expires_at ?? '') || (this.options.now ?? Date.now)() + 3600_000;
    return { token, expiresAt, catalog: parsed.token?.catalog ?? [] };
  }
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
