import { PROCESS_OWNER, secrets } from './secret-registry.js';

export { secrets, urlCredentialSecrets } from './secret-registry.js';

// Redaction by construction: every line the logger writes passes through scrubText(), which removes
// (1) every secret value registered now (secret-registry.ts: per owner, replaced and released as they change) and
// (2) credential-shaped URL parts and fields (signatures, TempURL signatures, tokens, passwords),
// so a secret cannot reach the journal even from a careless log call.

const REDACTED = '[REDACTED]';

/** Make `values` the secrets of `owner`, replacing those it registered before (a renewed token, a new config). */
export function setSecrets(owner: string, values: Iterable<string | undefined | null>): void {
  secrets.set(owner, values);
}

/** Forget the secrets of `owner` (a session closed, a source reconfigured). */
export function releaseSecrets(owner: string): void {
  secrets.release(owner);
}

/** Remember a secret value for the life of the process (values with an owner that ends: use setSecrets). */
export function registerSecret(value: string | undefined | null): void {
  secrets.add(PROCESS_OWNER, [value]);
}

const SECRET_QUERY_PARAMS =
  /([?&](?:signature|temp_url_sig|x-amz-signature|x-amz-security-token|securitytoken|token|password|secret_access_key|secretaccesskey)=)[^&#\s"']*/gi;
const SECRET_JSON_FIELDS =
  /("(?:password|secret_access_key|deploy_password|token|auth_token|x-auth-token|X-Auth-Token|signal_url|deploy_signal_id|temp_url_sig)"\s*:\s*")((?:[^"\\]|\\.)*)"/g;
const URL_USERINFO = /(\b[a-z][a-z0-9+.-]*:\/\/)[^/@\s"']+@/gi;
// An (Proxy-)Authorization header written out as text: `proxy-authorization: Basic dXNlcjpwYXNz`, or as JSON.
const AUTH_HEADER_TEXT = /((?:proxy-)?authorization"?\s*[:=]\s*"?)(?:(?:basic|bearer|digest|negotiate) +)?[^\s"',}]+/gi;

export function scrubText(text: string): string {
  let out = text;
  for (const secret of secrets.forms()) {
    if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  }
  out = out.replace(SECRET_QUERY_PARAMS, `$1${REDACTED}`);
  out = out.replace(SECRET_JSON_FIELDS, (_m, head: string, value: string) =>
    value === REDACTED ? _m : `${head}${REDACTED}"`,
  );
  out = out.replace(URL_USERINFO, `$1${REDACTED}@`);
  out = out.replace(AUTH_HEADER_TEXT, `$1${REDACTED}`);
  return out;
}

/** A URL safe to log: no userinfo, and secret query parameters (signatures, TempURL sigs) replaced. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.username || u.password) {
      u.username = '';
      u.password = '';
    }
    for (const key of [...u.searchParams.keys()]) {
      if (
        /^(signature|temp_url_sig|x-amz-signature|x-amz-security-token|securitytoken|token|password|secret_access_key|secretaccesskey)$/i.test(
          key,
        )
      ) {
        u.searchParams.set(key, REDACTED);
      }
    }
    // Registered secrets can sit anywhere else in a URL too (a path segment, another parameter).
    return scrubText(u.toString());
  } catch {
    return scrubText(url);
  }
}

// Fields redacted by name before a line is serialised (second layer: scrubText also catches string values of most
// of these names, but not numbers, objects or an Authorization header). Top level and one level down, as in
// `{ password }` or `{ heat: { password } }`, plus the credential headers of a logged request.
const SECRET_FIELDS = new Set(['password', 'secret_access_key', 'token']);
const SECRET_HEADERS = new Set(['authorization', 'proxy-authorization', 'x-auth-token']);

/**
 * A log call's fields with every credential-named field replaced by [REDACTED]. The fields are returned as they are
 * when nothing needs redacting (almost every line): no copy, and one pass over their names.
 */
export function redactFields<T>(fields: T): T {
  if (typeof fields !== 'object' || fields === null) return fields;
  let copy: Record<string, unknown> | undefined;
  for (const key of Object.keys(fields)) {
    const value = (fields as Record<string, unknown>)[key];
    let redacted = value;
    if (SECRET_FIELDS.has(key)) redacted = REDACTED;
    else if (typeof value === 'object' && value !== null && !Array.isArray(value))
      redacted = redactNamed(value, key === 'headers' ? SECRET_HEADERS : SECRET_FIELDS);
    if (redacted !== value) (copy ??= ownCopy(fields))[key] = redacted;
  }
  return (copy ?? fields) as T;
}

function redactNamed(value: object, names: ReadonlySet<string>): unknown {
  let copy: Record<string, unknown> | undefined;
  for (const key of Object.keys(value)) if (names.has(key)) (copy ??= ownCopy(value))[key] = REDACTED;
  return copy ?? value;
}

/** A copy that keeps the prototype and every own property (an Error's message and stack are not enumerable). */
function ownCopy(value: object): Record<string, unknown> {
  const copy = Object.create(Object.getPrototypeOf(value) as object | null) as Record<string, unknown>;
  for (const key of Object.getOwnPropertyNames(value)) copy[key] = (value as Record<string, unknown>)[key];
  return copy;
}
