import { isSecretName } from './secret-names.js';

// The secret values the logger scrubs from every line, registered by the code that holds them, each under an owner:
// a Keystone session (its password and live tokens), a collector's configuration, the proxy settings. An owner's
// values are replaced when it registers again (a new token replaces the one it renews) and dropped when it is
// released (a session closed, a source reconfigured), so the list holds what is live now, not everything ever seen.
// A value held by two owners stays until both have let it go.

const MIN_SECRET_LENGTH = 4;

/** The owner of values registered without one: kept for the life of the process. */
export const PROCESS_OWNER = 'process';

export class SecretRegistry {
  private readonly owners = new Map<string, ReadonlySet<string>>();
  /** Every form of every value, with the number of owners holding it. */
  private readonly holders = new Map<string, number>();
  /** Longest first (a secret containing a shorter one is replaced whole); rebuilt on the first line after a change. */
  private order: readonly string[] | undefined = [];

  /** Make `values` the owner's secrets, replacing whatever it registered before. */
  set(owner: string, values: Iterable<string | undefined | null>): void {
    this.replace(owner, formsOf(values));
  }

  /** Add `values` to the owner's secrets (for owners that only ever gain values, such as the process). */
  add(owner: string, values: Iterable<string | undefined | null>): void {
    const forms = formsOf(values);
    const before = this.owners.get(owner);
    if (forms.size === 0 || (before && [...forms].every((f) => before.has(f)))) return;
    if (before) for (const form of before) forms.add(form);
    this.replace(owner, forms);
  }

  /** Drop the owner's secrets (those no other owner holds stop being scrubbed). */
  release(owner: string): void {
    this.set(owner, []);
  }

  /** The forms to replace in a line, longest first. */
  forms(): readonly string[] {
    this.order ??= [...this.holders.keys()].sort((a, b) => b.length - a.length);
    return this.order;
  }

  /** How many forms a line is checked against (what a log line costs). */
  get size(): number {
    return this.holders.size;
  }

  /** How many owners hold values. */
  get ownerCount(): number {
    return this.owners.size;
  }

  clear(): void {
    this.owners.clear();
    this.holders.clear();
    this.order = [];
  }

  private replace(owner: string, forms: ReadonlySet<string>): void {
    const before = this.owners.get(owner);
    if (forms.size === 0) this.owners.delete(owner);
    else this.owners.set(owner, forms);
    for (const form of forms) if (!before?.has(form)) this.hold(form);
    if (before) for (const form of before) if (!forms.has(form)) this.letGo(form);
  }

  private hold(form: string): void {
    const n = this.holders.get(form) ?? 0;
    this.holders.set(form, n + 1);
    if (n === 0) this.order = undefined;
  }

  private letGo(form: string): void {
    const n = this.holders.get(form) ?? 0;
    if (n > 1) {
      this.holders.set(form, n - 1);
      return;
    }
    this.holders.delete(form);
    this.order = undefined;
  }
}

/** Each value as it may appear inside a line: raw, JSON-escaped, URL-encoded, form-encoded (URLSearchParams). */
function formsOf(values: Iterable<string | undefined | null>): Set<string> {
  const forms = new Set<string>();
  for (const value of values) {
    if (typeof value !== 'string' || value.length < MIN_SECRET_LENGTH) continue;
    forms
      .add(value)
      .add(JSON.stringify(value).slice(1, -1))
      .add(encodeURIComponent(value))
      .add(new URLSearchParams({ v: value }).toString().slice(2));
  }
  return forms;
}

/**
 * The password in a URL's user-info, `[scheme://]user:password@host…` (proxy settings, which may omit the scheme),
 * found without parsing it as a URL (the value may be malformed and still end up in a line): raw, decoded, and as
 * the Basic credentials a proxy agent sends in Proxy-Authorization.
 */
export function urlCredentialSecrets(value: string | undefined | null): string[] {
  if (typeof value !== 'string') return [];
  const userinfo = /^\s*(?:[a-z][a-z0-9+.-]*:\/\/)?([^/?#\s]*)@/i.exec(value)?.[1];
  const colon = userinfo?.indexOf(':') ?? -1;
  if (userinfo === undefined || colon < 0) return [];
  const user = userinfo.slice(0, colon);
  const password = userinfo.slice(colon + 1);
  let decodedUser = user;
  let decoded = password;
  try {
    decodedUser = decodeURIComponent(user);
    decoded = decodeURIComponent(password);
  } catch {
    // Not percent-encoded after all: the raw forms are what could be logged.
  }
  return [password, decoded, Buffer.from(`${decodedUser}:${decoded}`).toString('base64')];
}

/**
 * Every secret a URL carries: the password of its user-info (as urlCredentialSecrets finds it) and the value of each
 * query parameter whose name is a secret's (isSecretName: a signature, a TempURL's temp_url_sig, a token).
 */
export function urlSecrets(value: string | undefined | null): string[] {
  const out = urlCredentialSecrets(value);
  if (typeof value !== 'string') return out;
  const query = /\?([^#\s]*)/.exec(value)?.[1];
  if (query === undefined) return out;
  for (const [name, v] of new URLSearchParams(query)) if (v !== '' && isSecretName(name)) out.push(v);
  return out;
}

/** The process's registry: the one every logger and error message is scrubbed with (redact.ts). */
export const secrets = new SecretRegistry();
