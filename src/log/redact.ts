// Redaction by construction: every line the logger writes passes through scrubText(), which removes
// (1) every secret value the agent has loaded (registered when config and metadata are read) and
// (2) credential-shaped URL parts and fields (signatures, TempURL signatures, tokens, passwords),
// so a secret cannot reach the journal even from a careless log call.

const REDACTED = '[REDACTED]';
const MIN_SECRET_LENGTH = 4;
const registered = new Set<string>();
// Longest first, so a secret that contains a shorter one is replaced whole rather than leaving its remainder.
let scrubOrder: string[] = [];

/** Remember a secret value so it is scrubbed from every later log line and error message. */
export function registerSecret(value: string | undefined | null): void {
  if (typeof value !== 'string' || value.length < MIN_SECRET_LENGTH) return;
  // The same secret may also appear JSON-escaped, URL-encoded or form-encoded (URLSearchParams) inside a line.
  const forms = [value, JSON.stringify(value).slice(1, -1), encodeURIComponent(value), new URLSearchParams({ v: value }).toString().slice(2)];
  let added = false;
  for (const form of forms) {
    if (registered.has(form)) continue;
    registered.add(form);
    added = true;
  }
  if (added) scrubOrder = [...registered].sort((a, b) => b.length - a.length);
}

/** For tests: forget registered secrets. */
export function clearRegisteredSecrets(): void {
  registered.clear();
  scrubOrder = [];
}

const SECRET_QUERY_PARAMS = /([?&](?:signature|temp_url_sig|x-amz-signature|x-amz-security-token|securitytoken|token|password|secret_access_key|secretaccesskey)=)[^&#\s"']*/gi;
const SECRET_JSON_FIELDS = /("(?:password|secret_access_key|deploy_password|token|auth_token|x-auth-token|X-Auth-Token|signal_url|deploy_signal_id|temp_url_sig)"\s*:\s*")((?:[^"\\]|\\.)*)"/g;
const URL_USERINFO = /(\b[a-z][a-z0-9+.-]*:\/\/)[^/@\s"']+@/gi;

export function scrubText(text: string): string {
  let out = text;
  for (const secret of scrubOrder) {
    if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  }
  out = out.replace(SECRET_QUERY_PARAMS, `$1${REDACTED}`);
  out = out.replace(SECRET_JSON_FIELDS, (_m, head: string, value: string) => (value === REDACTED ? _m : `${head}${REDACTED}"`));
  out = out.replace(URL_USERINFO, `$1${REDACTED}@`);
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
      if (/^(signature|temp_url_sig|x-amz-signature|x-amz-security-token|securitytoken|token|password|secret_access_key|secretaccesskey)$/i.test(key)) {
        u.searchParams.set(key, REDACTED);
      }
    }
    // Registered secrets can sit anywhere else in a URL too (a path segment, another parameter).
    return scrubText(u.toString());
  } catch {
    return scrubText(url);
  }
}
