import { createHmac } from 'node:crypto';

// AWS signature version 2 as heat-api-cfn verifies it (through Keystone's ec2tokens): the request parameters plus
// SignatureMethod=HmacSHA256, sorted by code point and RFC 3986-encoded, make the canonical query; the string to sign
// is "VERB\nhost\npath\ncanonical-query"; the signature is the base64 HMAC-SHA256 of it under the secret key.
// A fresh HMAC is computed for every request (upstream reused one and chained paths together, B3).

/** RFC 3986 percent-encoding of UTF-8 text: only A-Z a-z 0-9 - _ . ~ stay bare. */
export function rfc3986Encode(text: string): string {
  return encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** The sorted, encoded `k=v&...` query that is signed (Signature itself excluded). */
export function canonicalQueryV2(params: Readonly<Record<string, string>>): string {
  return Object.keys(params)
    .filter((k) => k !== 'Signature')
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    .map((k) => `${rfc3986Encode(k)}=${rfc3986Encode(params[k] ?? '')}`)
    .join('&');
}

export interface SignV2Input {
  readonly secret: string;
  readonly method: string;
  /** The Host the server sees: host name plus port when it is not the scheme's default. */
  readonly host: string;
  /** URL path, e.g. "/v1/". */
  readonly path: string;
  readonly params: Readonly<Record<string, string>>;
}

export function signV2(input: SignV2Input): string {
  const text = `${input.method.toUpperCase()}\n${input.host}\n${input.path}\n${canonicalQueryV2(input.params)}`;
  return createHmac('sha256', input.secret).update(text, 'utf8').digest('base64');
}

/**
 * A signed DescribeStackResource URL for one logical resource. The parameters are exactly the ones upstream sends
 * (no Timestamp or Version), so heat-api-cfn accepts it the same way.
 */
export function describeStackResourceUrl(
  metadataUrl: string,
  opts: { stackName: string; resource: string; accessKeyId: string; secret: string; json?: boolean },
): string {
  const url = new URL(metadataUrl);
  const params: Record<string, string> = {
    Action: 'DescribeStackResource',
    // The answer as JSON (heat-api-cfn's default is XML), signed as every other parameter.
    ...(opts.json ? { ContentType: 'JSON' } : {}),
    StackName: opts.stackName,
    LogicalResourceId: opts.resource,
    AWSAccessKeyId: opts.accessKeyId,
    SignatureVersion: '2',
    SignatureMethod: 'HmacSHA256',
  };
  const signature = signV2({ secret: opts.secret, method: 'GET', host: url.host, path: url.pathname, params });
  // Any query already on metadata_url is dropped: it would not be covered by the signature and the server would refuse it.
  const entries: Array<[string, string]> = [...Object.entries(params), ['Signature', signature]];
  const query = entries.map(([k, v]) => `${rfc3986Encode(k)}=${rfc3986Encode(v)}`).join('&');
  url.search = `?${query}`;
  return url.toString();
}
