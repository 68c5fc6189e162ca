import { createHash } from 'node:crypto';
import type { AgentConfig } from '../config/options.js';
import type { HttpClient, HttpResponse } from '../http/types.js';
import type { Logger } from '../log/logger.js';
import { releaseSecrets, setSecrets } from '../log/redact.js';
import { isObject, validCatalog, type KeystoneToken } from './catalog.js';
import { forgetDiscovery, identityV3Url } from './discovery.js';
import { KeystoneError } from './keystone-error.js';
import { TokenCache, type CacheIdentity } from './token-cache.js';

export { findEndpoint, type KeystoneToken } from './catalog.js';
export { KeystoneError } from './keystone-error.js';

// Keystone v3 password authentication shared by the heat and zaqar collectors and the HEAT/ZAQAR signal transports.
// Tokens are kept in memory until shortly before they expire (upstream re-authenticated on every poll, B11) and
// dropped by invalidate() when a service answers 401. With a token cache (`[keystone] cache_dir`) the first token a
// session needs is looked for on disk, and every new one is written there, so a restart does not log in again.
// The v3 endpoint is found by version discovery when auth_url names no version, and only when a login is needed.

export interface KeystoneCredentials {
  readonly authUrl: string;
  readonly userId: string;
  readonly password: string;
  readonly projectId: string;
}

export interface KeystoneSessionOptions {
  readonly timeoutSeconds: number;
  readonly caFile?: string;
  readonly insecure?: boolean;
  readonly now?: () => number;
  /** The monotonic clock the reuse of a token is timed with (default: `now` when given, else performance.now). */
  readonly monotonic?: () => number;
  readonly log?: Logger;
  /** `[keystone] cache_dir` (mapped under --root) and `cache_ttl`. */
  readonly cache?: { readonly dir: string; readonly ttlSeconds: number };
}

const EXPIRY_MARGIN_MS = 60_000;
const DEFAULT_LIFETIME_MS = 3600_000;
let sessionsMade = 0;

export class KeystoneSession {
  // Reused until `reuseBefore` on the monotonic clock: a step of the wall clock neither keeps an expired token (401s
  // until a re-login) nor throws away a good one.
  private cached: { token: KeystoneToken; reuseBefore: number } | undefined;
  private inflight: Promise<{ token: KeystoneToken; reuseBefore: number }> | undefined;
  private readonly cache: TokenCache | undefined;
  private readonly identity: CacheIdentity;
  /** The disk is read once, for the first token; afterwards memory holds whatever the disk would. */
  private diskRead = false;
  private removal: Promise<void> | undefined;
  /**
   * The session's secrets in the logger's registry: its password and the tokens that still work (the current one,
   * and the one it replaced until that expires: a request sent just before the renewal may still be logging).
   * Replaced at every renewal and released by close(), so renewing for months keeps two tokens registered, not all.
   */
  private readonly secretOwner = `keystone-session-${++sessionsMade}`;
  private replaced: { token: KeystoneToken; reuseBefore: number } | undefined;

  constructor(
    private readonly http: HttpClient,
    private readonly creds: KeystoneCredentials,
    private readonly options: KeystoneSessionOptions = { timeoutSeconds: 10 },
  ) {
    this.publishSecrets();
    this.identity = { authUrl: creds.authUrl, userId: creds.userId, projectId: creds.projectId };
    if (options.cache) {
      this.cache = new TokenCache({
        dir: options.cache.dir,
        ttlSeconds: options.cache.ttlSeconds,
        marginMs: EXPIRY_MARGIN_MS,
        secretOwner: `${this.secretOwner}-cache`,
        ...(options.log ? { log: options.log } : {}),
      });
    }
  }

  /** A valid token, from memory (or the token cache) while it has more than a minute left. Concurrent callers share one login. */
  async token(signal?: AbortSignal): Promise<KeystoneToken> {
    if (this.cached && this.cached.reuseBefore > this.monotonic()) return this.cached.token;
    this.inflight ??= this.obtain(signal).finally(() => {
      this.inflight = undefined;
    });
    const fresh = await this.inflight;
    if (this.cached && this.cached.token.token !== fresh.token.token) this.replaced = this.cached;
    this.cached = fresh;
    this.publishSecrets();
    return fresh.token;
  }

  /** Forget the token (a service answered 401): the next token() logs in, and a restart will not reuse it either. */
  invalidate(): void {
    this.cached = undefined;
    this.replaced = undefined;
    this.diskRead = true;
    if (this.cache) this.removal = this.cache.remove(this.identity);
    this.publishSecrets();
  }

  /**
   * The session is no longer kept (its credentials changed, or its user was forgotten): its password and tokens stop
   * being scrubbed, unless another owner (the configuration) holds them too.
   */
  close(): void {
    releaseSecrets(this.secretOwner);
    releaseSecrets(`${this.secretOwner}-cache`);
  }

  private publishSecrets(arriving?: string): void {
    // Timed as the reuse is (the monotonic clock), not by our clock against Keystone's expires_at: a clock ahead of
    // Keystone's must not stop a working token from being scrubbed.
    const replaced =
      this.replaced && this.replaced.reuseBefore + EXPIRY_MARGIN_MS > this.monotonic()
        ? this.replaced.token
        : undefined;
    const live = [this.cached?.token, replaced].filter((t) => t !== undefined).map((t) => t.token);
    setSecrets(this.secretOwner, [this.creds.password, ...live, arriving]);
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  private monotonic(): number {
    // A caller's own clock (a test's fake one) times the reuse too, unless it gives a monotonic one.
    const { monotonic, now } = this.options;
    return (monotonic ?? now ?? (() => performance.now()))();
  }

  private async obtain(signal?: AbortSignal): Promise<{ token: KeystoneToken; reuseBefore: number }> {
    // A removal still running must not land after the new token is written.
    await this.removal;
    this.removal = undefined;
    if (this.cache && !this.diskRead) {
      this.diskRead = true;
      const kept = await this.cache.load(this.identity, this.now());
      if (kept) {
        this.options.log?.debug(
          { expiresAt: new Date(kept.token.expiresAt).toISOString() },
          'reusing the cached Keystone token',
        );
        return { token: kept.token, reuseBefore: this.monotonic() + (kept.reuseUntil - this.now()) };
      }
    }
    const { token, lifetimeMs } = await this.authenticate(signal);
    await this.cache?.save(this.identity, token, this.now());
    return { token, reuseBefore: this.monotonic() + lifetimeMs - EXPIRY_MARGIN_MS };
  }

  /** A new token, and how long it lives: by Keystone's own clock (issued_at to expires_at) when it says both. */
  private async authenticate(signal?: AbortSignal): Promise<{ token: KeystoneToken; lifetimeMs: number }> {
    const res = await this.postPassword(signal);
    if (res.statusCode === 401 || res.statusCode === 403) {
      throw new KeystoneError(
        `Keystone at ${res.redactedUrl} refused the credentials (${res.statusCode}); check user_id, password and project_id`,
        { statusCode: res.statusCode },
      );
    }
    // A discovered endpoint that is gone is looked for again next time.
    if (res.statusCode === 404) forgetDiscovery(this.creds.authUrl);
    if (res.statusCode !== 201 && res.statusCode !== 200) {
      throw new KeystoneError(
        `Keystone authentication at ${res.redactedUrl} answered ${res.statusCode}; check auth_url`,
        { statusCode: res.statusCode },
      );
    }
    const header = res.headers['x-subject-token'];
    const token = Array.isArray(header) ? header[0] : header;
    if (!token) throw new KeystoneError(`Keystone at ${res.redactedUrl} returned no X-Subject-Token`);
    // Scrubbed from here on, before anything about this answer can be logged.
    this.publishSecrets(token);
    let parsed: unknown;
    try {
      parsed = JSON.parse(res.body.toString('utf8'));
    } catch (err) {
      throw new KeystoneError(`Keystone at ${res.redactedUrl} returned a body that is not JSON`, { cause: err });
    }
    const tok = isObject(parsed) && isObject(parsed.token) ? parsed.token : undefined;
    if (!tok) throw new KeystoneError(`Keystone at ${res.redactedUrl} returned no "token" object`);
    const expires = typeof tok.expires_at === 'string' ? Date.parse(tok.expires_at) : NaN;
    const issued = typeof tok.issued_at === 'string' ? Date.parse(tok.issued_at) : NaN;
    const now = this.now();
    const expiresAt = Number.isFinite(expires) ? expires : now + DEFAULT_LIFETIME_MS;
    // Keystone's clock and ours may differ: its own issued_at..expires_at span is the lifetime when it gives both.
    const lifetimeMs = Number.isFinite(issued) && expiresAt > issued ? expiresAt - issued : expiresAt - now;
    return { token: { token, expiresAt, catalog: validCatalog(tok.catalog) }, lifetimeMs };
  }

  /** The password login's answer, from the v3 endpoint (discovered when auth_url names no version). */
  private async postPassword(signal?: AbortSignal): Promise<HttpResponse> {
    const transport = {
      timeoutSeconds: this.options.timeoutSeconds,
      ...(this.options.caFile ? { caFile: this.options.caFile } : {}),
      ...(this.options.insecure ? { insecure: true } : {}),
      ...(signal ? { signal } : {}),
    };
    const v3 = await identityV3Url(this.http, this.creds.authUrl, {
      ...transport,
      ...(this.options.log ? { log: this.options.log } : {}),
    });
    const body = JSON.stringify({
      auth: {
        identity: {
          methods: ['password'],
          password: { user: { id: this.creds.userId, password: this.creds.password } },
        },
        scope: { project: { id: this.creds.projectId } },
      },
    });
    try {
      return await this.http.request({
        url: `${v3}/auth/tokens`,
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body,
        ...transport,
      });
    } catch (err) {
      throw new KeystoneError(`Keystone authentication failed: ${err instanceof Error ? err.message : String(err)}`, {
        cause: err,
      });
    }
  }
}

/** Session options for a collector: its logger, and the token cache when `[keystone] cache_dir` is set. */
export function collectorSessionOptions(
  config: AgentConfig,
  log: Logger,
): Pick<KeystoneSessionOptions, 'log' | 'cache'> {
  const dir = config.keystone.cache_dir;
  return { log, ...(dir ? { cache: { dir, ttlSeconds: config.keystone.cache_ttl } } : {}) };
}

/**
 * A session kept in a collector's memory across polls, so its token is reused until it nears expiry. A new session
 * is made when the credentials, options or HTTP client (rebuilt on reload) change.
 */
export function rememberedSession(
  memory: KeystoneMemory,
  http: HttpClient,
  creds: KeystoneCredentials,
  options: KeystoneSessionOptions,
): KeystoneSession {
  const fingerprint = createHash('sha256')
    .update(
      JSON.stringify([
        creds.authUrl,
        creds.userId,
        creds.password,
        creds.projectId,
        options.timeoutSeconds,
        options.caFile ?? '',
        options.insecure ?? false,
        options.cache?.dir ?? '',
        options.cache?.ttlSeconds ?? 0,
      ]),
    )
    .digest('hex');
  const kept = memory.keystone;
  if (kept?.fingerprint === fingerprint && kept.http === http) return kept.session;
  kept?.session.close();
  const session = new KeystoneSession(http, creds, options);
  memory.keystone = { fingerprint, http, session };
  return session;
}

/** Where a caller keeps its session across calls: part of a collector's memory, or one per signal user. */
export interface KeystoneMemory {
  keystone?: { readonly fingerprint: string; readonly http: HttpClient; readonly session: KeystoneSession };
}
