import { isSecretInput } from '../heat/deployment.js';
import { scrubText } from '../log/redact.js';

// Credentials out of the JSON documents a support bundle copies (deployment records, deployed inputs, signal bodies,
// queued signals), in three layers: values under a credential-named key, the values of a deployment's secret inputs
// (`{"name": "db_password", "value": …}`, as isSecretInput names them), then every string scrubbed of the secrets the
// process knows and of credential-shaped text (signed URLs, user-info, tokens).

export const REDACTED = '[REDACTED]';

/** Keys whose values are credentials wherever they appear: the one rule for names, and the signal URL's. */
export function isSecretKey(key: string): boolean {
  return isSecretInput(key);
}

export function redactJson(value: unknown): unknown {
  if (typeof value === 'string') return scrubText(value);
  if (Array.isArray(value)) return value.map(redactJson);
  if (value === null || typeof value !== 'object') return value;
  const object = value as Record<string, unknown>;
  const secretInput = typeof object.name === 'string' && 'value' in object && isSecretInput(object.name);
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(object)) {
    out[key] = (secretInput && key === 'value') || (isSecretKey(key) && v !== null) ? REDACTED : redactJson(v);
  }
  return out;
}

/**
 * Every credential in a JSON document, to be registered before anything is written: the same value can sit in a
 * log line of the journal or in an error message of another file, where no key names it.
 */
export function secretsIn(value: unknown, out: Set<string> = new Set()): Set<string> {
  if (Array.isArray(value)) for (const v of value) secretsIn(v, out);
  else if (value !== null && typeof value === 'object') {
    const object = value as Record<string, unknown>;
    const secretInput = typeof object.name === 'string' && isSecretInput(object.name);
    for (const [key, v] of Object.entries(object)) {
      if ((secretInput && key === 'value') || isSecretKey(key)) addText(v, out);
      else secretsIn(v, out);
    }
  }
  return out;
}

function addText(value: unknown, out: Set<string>): void {
  if (typeof value === 'string' && value !== '') out.add(value);
  else if (typeof value === 'number') out.add(String(value));
  else if (value !== null && typeof value === 'object') {
    const text = JSON.stringify(value);
    if (text !== '{}' && text !== '[]') out.add(text);
    secretsIn(value, out);
    for (const v of Object.values(value)) addText(v, out);
  }
}
