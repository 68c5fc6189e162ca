import { setMessageScrubber } from '../errors.js';
import { isSecretName, SECRET_NAME } from './secret-names.js';
import { PROCESS_OWNER, secrets } from './secret-registry.js';

export { secrets, urlCredentialSecrets, urlSecrets } from './secret-registry.js';

// Redaction by construction: every line the logger writes passes through scrubText(), which removes
// (1) every secret value registered now (secret-registry.ts: per owner, replaced and released as they change) and
// (2) the values of secret-named query parameters and JSON fields (the one rule for names, secret-names.ts), URL
// user-info and Authorization headers,
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

// A query parameter, `name=value` after ? or &; a JSON string field, `"name": "value"`. Their values are replaced when
// the name is a secret's (isSecretName).
const QUERY_PARAM = /([?&]([^=&#\s"']+)=)([^&#\s"']*)/g;
// Only names the rule could match are captured (its own pattern inside the name), so a line without one costs one scan.
const JSON_STRING_FIELD = new RegExp(
  `("([^"\\\\]{0,100}?(?:${SECRET_NAME.source}|signal_url|deploy_signal_id)[^"\\\\]{0,100})"\\s*:\\s*")((?:[^"\\\\]|\\\\.)*)"`,
  'gi',
);
// User-info holds no brackets (RFC 3986), so a placeholder such as `http://[user:password@]host` in a message is kept.
const URL_USERINFO = /(\b[a-z][a-z0-9+.-]*:\/\/)[^/@\s"'[\]]+@/gi;
// An (Proxy-)Authorization header written out as text: `proxy-authorization: Basic dXNlcjpwYXNz`, or as JSON.
const AUTH_HEADER_TEXT = /((?:proxy-)?authorization"?\s*[:=]\s*"?)(?:(?:basic|bearer|digest|negotiate) +)?[^\s"',}]+/gi;

/**
 * Fields of the agent's own log lines whose names the rule flags but whose values are never secrets: metadata keys
 * (a cache entry's name, a `deployment_key` value; docs/logging.md#fields). test/log/field-names.test.ts keeps this
 * list to the documented fields.
 */
export const NOT_SECRET_FIELDS: ReadonlySet<string> = new Set(['key', 'deploymentKey']);

/** The one rule for names (secret-names.ts), as the logger applies it to the names of fields. */
export function isSecretField(name: string): boolean {
  return isSecretName(name) && !NOT_SECRET_FIELDS.has(name);
}

export function scrubText(text: string): string {
  let out = text;
  for (const secret of secrets.forms()) {
    if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  }
  // Each pattern is tried only on text holding a character it cannot match without: most strings (ids, names, states,
  // times) skip most of them. `status` scrubs every value of its report, ~90,000 strings for 10,000 deployments,
  // where the four scans cost ~75 ms and the checks ~10 ms.
  if (out.includes('=')) {
    out = out.replace(QUERY_PARAM, (whole, head: string, name: string, value: string) =>
      value !== '' && isSecretName(decodedName(name)) ? `${head}${REDACTED}` : whole,
    );
  }
  if (out.includes('"')) {
    out = out.replace(JSON_STRING_FIELD, (whole, head: string, name: string, value: string) =>
      value !== REDACTED && isSecretJsonField(name) ? `${head}${REDACTED}"` : whole,
    );
  }
  if (out.includes('@')) out = out.replace(URL_USERINFO, `$1${REDACTED}@`);
  if (out.includes(':') || out.includes('=')) out = out.replace(AUTH_HEADER_TEXT, `$1${REDACTED}`);
  return out;
}

// Every AgentError's message is scrubbed as it is made, in every process that loads the logger.
setMessageScrubber(scrubText);

/** A JSON field holding a secret: named as one, or a signal URL (whoever has it can signal). */
function isSecretJsonField(name: string): boolean {
  return isSecretField(name) || name === 'signal_url' || name === 'deploy_signal_id';
}

function decodedName(name: string): string {
  try {
    return decodeURIComponent(name.replace(/\+/g, ' '));
  } catch {
    return name;
  }
}

/**
 * A copy of a value (JSON, or a report of its shape) with every string scrubbed as a log line is: what status, doctor
 * and the support bundle show. Keys are kept (they are names, not values); numbers, booleans and objects of a class
 * (an exact number) are kept as they are.
 */
export function scrubValue<T>(value: T): T {
  if (typeof value === 'string') return scrubText(value) as T;
  if (Array.isArray(value)) return value.map(scrubValue) as T;
  if (value === null || typeof value !== 'object') return value;
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) out[key] = scrubValue(v);
  return out as T;
}

/** A URL safe to log: no userinfo, and secret query parameters (signatures, TempURL sigs) replaced. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.username || u.password) {
      u.username = '';
      u.password = '';
    }
    for (const key of [...u.searchParams.keys()]) if (isSecretName(key)) u.searchParams.set(key, REDACTED);
    // Registered secrets can sit anywhere else in a URL too (a path segment, another parameter).
    return scrubText(u.toString());
  } catch {
    return scrubText(url);
  }
}

// Fields redacted by name (isSecretField) before a line is serialised (second layer: scrubText also catches string
// values of these names, but not numbers or objects). Top level and one level down, as in `{ password }`,
// `{ heat: { password } }` or a logged request's `{ headers: { authorization } }`.
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
    if (isSecretField(key)) redacted = REDACTED;
    else if (typeof value === 'object' && value !== null && !Array.isArray(value)) redacted = redactNamed(value);
    if (redacted !== value) (copy ??= ownCopy(fields))[key] = redacted;
  }
  return (copy ?? fields) as T;
}

function redactNamed(value: object): unknown {
  let copy: Record<string, unknown> | undefined;
  for (const key of Object.keys(value)) if (isSecretField(key)) (copy ??= ownCopy(value))[key] = REDACTED;
  return copy ?? value;
}

/** A copy that keeps the prototype and every own property (an Error's message and stack are not enumerable). */
function ownCopy(value: object): Record<string, unknown> {
  const copy = Object.create(Object.getPrototypeOf(value) as object | null) as Record<string, unknown>;
  for (const key of Object.getOwnPropertyNames(value)) copy[key] = (value as Record<string, unknown>)[key];
  return copy;
}
