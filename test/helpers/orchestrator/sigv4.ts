import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { rfc3986 } from './sigv2.js';

// AWS signature version 4 of a query request (GET, empty body), as Keystone's ec2tokens checks the requests boto 2 sends
// for heat-cfntools: the scope (date/region/service) is taken from the Authorization header as it came, as Keystone
// takes it. Test-side, so that Debian's heat-cfntools can talk to the test's heat-api-cfn.

export interface V4Check {
  readonly accessKey: string;
  readonly ok: boolean;
}

/** The access key and whether the signature is right, or undefined when the request is not v4-signed. */
export function checkV4(req: IncomingMessage, url: URL, secretFor: (accessKey: string) => string): V4Check | undefined {
  const auth = req.headers.authorization ?? '';
  const m =
    /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]*)\/([^/]*)\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]+)$/.exec(
      auth,
    );
  if (!m) return undefined;
  const [, accessKey, date, region, service, signedHeaders, signature] = m as unknown as string[];
  const headers = signedHeaders!.split(';');
  const canonicalHeaders = headers
    .map(
      (h) =>
        `${h}:${String(req.headers[h] ?? '')
          .trim()
          .replace(/\s+/g, ' ')}\n`,
    )
    .join('');
  const query = [...url.searchParams.entries()]
    .sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0))
    .map(([k, v]) => `${rfc3986(k)}=${rfc3986(v)}`)
    .join('&');
  const sha = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');
  const canonical = [req.method, url.pathname, query, canonicalHeaders, signedHeaders, sha('')].join('\n');
  const scope = `${date}/${region}/${service}/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', String(req.headers['x-amz-date'] ?? ''), scope, sha(canonical)].join('\n');
  const hmac = (key: Buffer | string, text: string) => createHmac('sha256', key).update(text, 'utf8').digest();
  let key = hmac(`AWS4${secretFor(accessKey!)}`, date!);
  for (const part of [region!, service!, 'aws4_request']) key = hmac(key, part);
  const expected = createHmac('sha256', key).update(toSign, 'utf8').digest('hex');
  const a = Buffer.from(expected);
  const b = Buffer.from(signature!);
  return { accessKey: accessKey!, ok: a.length === b.length && timingSafeEqual(a, b) };
}
