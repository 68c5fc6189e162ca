import { createHmac } from 'node:crypto';

// AWS signature version 2 as heat-api-cfn (through Keystone's ec2tokens) verifies it: sorted, RFC 3986-encoded
// query without Signature; string to sign "VERB\nhost\npath\nquery"; base64 HMAC-SHA256 with the secret key.
// Test-side implementation, written independently of the agent's signer so each checks the other.

export function rfc3986(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

export function canonicalQuery(params: Record<string, string>): string {
  return Object.keys(params)
    .filter((k) => k !== 'Signature')
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    .map((k) => `${rfc3986(k)}=${rfc3986(params[k] ?? '')}`)
    .join('&');
}

export function signV2(
  secret: string,
  verb: string,
  host: string,
  path: string,
  params: Record<string, string>,
): string {
  const text = `${verb}\n${host}\n${path}\n${canonicalQuery(params)}`;
  return createHmac('sha256', secret).update(text, 'utf8').digest('base64');
}
