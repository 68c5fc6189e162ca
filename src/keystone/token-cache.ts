import { createHash } from 'node:crypto';
import { constants, promises as fs } from 'node:fs';
import path from 'node:path';
import type { Logger } from '../log/logger.js';
import { setSecrets } from '../log/redact.js';
import { writeFileAtomic } from '../util/atomic-write.js';
import { isObject, validCatalog, type KeystoneToken } from './catalog.js';

// `[keystone] cache_dir`: Keystone tokens kept on disk so a restarted agent does not log in again. One file per
// (auth_url, user, project), `token-<sha256>.json`, mode 0600, written atomically into a directory created 0700.
// A file is reused only while its token is more than the safety margin from expiry and younger than cache_ttl
// (upstream's dogpile expiration time). The cached catalog decides where the token (and the agent's metadata) goes,
// so a file is trusted only if this user owns it and nobody else can read or write it; anything else about a file
// (missing fields, bad JSON, a symlink, another key's content) makes it ignored with one log line, and the next
// login replaces it. Failing to read or write the cache never fails a login.

export interface CacheIdentity {
  readonly authUrl: string;
  readonly userId: string;
  readonly projectId: string;
}

export interface TokenCacheOptions {
  /** Directory, already mapped under --root. */
  readonly dir: string;
  /** Longest age of a reused file, in seconds (`[keystone] cache_ttl`). */
  readonly ttlSeconds: number;
  /** A reused token must have at least this long left, in ms. */
  readonly marginMs: number;
  readonly log?: Logger;
  /** Who the token read back is registered for scrubbing under (replaced by the next one read). */
  readonly secretOwner?: string;
}

export interface CachedToken {
  readonly token: KeystoneToken;
  /** When the token stops being reused (ms since the epoch). */
  readonly reuseUntil: number;
}

const FORMAT = 1;
// A catalog of a large cloud is tens of kilobytes; a file far beyond that is not ours.
const MAX_FILE_BYTES = 1024 * 1024;
/** A token stored up to this far "ahead" of now is still trusted (clocks of one host within a minute of a step). */
const STORED_AHEAD_TOLERANCE_MS = 60_000;
// Header-safe: a token read back is sent as X-Auth-Token.
const TOKEN_SHAPE = /^[\x21-\x7e]{1,8192}$/;

export class TokenCache {
  constructor(private readonly options: TokenCacheOptions) {}

  fileFor(id: CacheIdentity): string {
    const digest = createHash('sha256')
      .update(JSON.stringify([trimSlashes(id.authUrl), id.userId, id.projectId]))
      .digest('hex');
    return path.join(this.options.dir, `token-${digest}.json`);
  }

  /** The cached token for `id` when it may still be used at `now`; undefined (with one log line) otherwise. */
  async load(id: CacheIdentity, now: number): Promise<CachedToken | undefined> {
    const file = this.fileFor(id);
    let text: string;
    try {
      const read = await readOwnPrivateFile(file);
      if (read === undefined) return undefined;
      text = read;
    } catch (err) {
      this.ignore(
        file,
        err instanceof CacheFileRefused
          ? err.message
          : `unreadable (${(err as NodeJS.ErrnoException).code ?? String(err)})`,
      );
      return undefined;
    }
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch {
      this.ignore(file, 'not JSON');
      return undefined;
    }
    const entry = parseEntry(doc, id);
    if (typeof entry === 'string') {
      this.ignore(file, entry);
      return undefined;
    }
    // Stored "in the future": written while the clock was ahead, so neither its age nor its expiry can be trusted.
    if (entry.storedAt > now + STORED_AHEAD_TOLERANCE_MS) {
      this.ignore(file, 'stored later than now (the clock stepped back since)');
      return undefined;
    }
    setSecrets(this.options.secretOwner ?? 'keystone-token-cache', [entry.token.token]);
    const reuseUntil = Math.min(
      entry.token.expiresAt - this.options.marginMs,
      entry.storedAt + this.options.ttlSeconds * 1000,
    );
    if (now >= reuseUntil) {
      this.options.log?.info(
        {
          file,
          expiresAt: new Date(entry.token.expiresAt).toISOString(),
          storedAt: new Date(entry.storedAt).toISOString(),
        },
        'cached Keystone token expired; logging in',
      );
      return undefined;
    }
    return { token: entry.token, reuseUntil };
  }

  /** Store a fresh token; a failure is logged and otherwise ignored (the token still works from memory). */
  async save(id: CacheIdentity, token: KeystoneToken, now: number): Promise<void> {
    const file = this.fileFor(id);
    const doc = {
      format: FORMAT,
      auth_url: trimSlashes(id.authUrl),
      user_id: id.userId,
      project_id: id.projectId,
      stored_at: new Date(now).toISOString(),
      expires_at: new Date(token.expiresAt).toISOString(),
      token: token.token,
      catalog: token.catalog,
    };
    try {
      await writeFileAtomic(file, JSON.stringify(doc), { mode: 0o600, mkdirMode: 0o700 });
    } catch (err) {
      this.options.log?.warn(
        { file, reason: (err as NodeJS.ErrnoException).code ?? String(err) },
        'cannot write the Keystone token cache; the token is kept in memory only',
      );
    }
  }

  /** Drop the file for `id` (its token was refused). */
  async remove(id: CacheIdentity): Promise<void> {
    const file = this.fileFor(id);
    try {
      await fs.rm(file, { force: true });
    } catch (err) {
      this.options.log?.warn(
        { file, reason: (err as NodeJS.ErrnoException).code ?? String(err) },
        'cannot remove a refused token from the Keystone token cache',
      );
    }
  }

  private ignore(file: string, reason: string): void {
    this.options.log?.warn({ file, reason }, 'ignoring the cached Keystone token; logging in');
  }
}

class CacheFileRefused extends Error {}

/** The file's text, undefined when it does not exist; refuses symlinks, other owners and group/other access. */
async function readOwnPrivateFile(file: string): Promise<string | undefined> {
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // Nothing stored yet; a path through a file is reported once, by the write that follows.
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    if (code === 'ELOOP') throw new CacheFileRefused('a symbolic link');
    throw err;
  }
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw new CacheFileRefused('not a regular file');
    const uid = process.getuid?.();
    if (uid !== undefined && st.uid !== uid) throw new CacheFileRefused(`owned by uid ${st.uid}, not ${uid}`);
    if ((st.mode & 0o077) !== 0)
      throw new CacheFileRefused(`mode ${(st.mode & 0o777).toString(8)} gives others access (must be 0600)`);
    if (st.size > MAX_FILE_BYTES) throw new CacheFileRefused(`${st.size} bytes, over ${MAX_FILE_BYTES}`);
    return await handle.readFile('utf8');
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/** The entry in a parsed cache file, or why it cannot be used. */
function parseEntry(doc: unknown, id: CacheIdentity): { token: KeystoneToken; storedAt: number } | string {
  if (!isObject(doc) || doc.format !== FORMAT) return 'unknown format';
  if (doc.auth_url !== trimSlashes(id.authUrl) || doc.user_id !== id.userId || doc.project_id !== id.projectId)
    return 'written for another auth_url, user or project';
  if (typeof doc.token !== 'string' || !TOKEN_SHAPE.test(doc.token)) return 'no usable token';
  const expiresAt = typeof doc.expires_at === 'string' ? Date.parse(doc.expires_at) : NaN;
  const storedAt = typeof doc.stored_at === 'string' ? Date.parse(doc.stored_at) : NaN;
  if (!Number.isFinite(expiresAt) || !Number.isFinite(storedAt)) return 'no readable expires_at or stored_at';
  if (!Array.isArray(doc.catalog)) return 'no catalog';
  return { token: { token: doc.token, expiresAt, catalog: validCatalog(doc.catalog) }, storedAt };
}

function trimSlashes(url: string): string {
  return url.replace(/\/+$/, '');
}
