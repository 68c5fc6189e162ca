import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { passwordToken, type PasswordAuth, type Token } from './identity.js';

// Bridges one known incompatibility between Debian bookworm's packages: Keystone (since the OSSA-2025-002 fix)
// answers POST /v3/ec2tokens only with a service token, and heat-api-cfn 19 sends none, so every signed CFN request
// would get 403. Heat's [ec2authtoken] auth_uri points here; this proxy forwards to Keystone unchanged except for
// an X-Auth-Token of the heat service user on ec2tokens requests. Loopback only.

export interface Ec2Bridge {
  /** http://127.0.0.1:PORT/v3 — for [ec2authtoken] auth_uri. */
  readonly url: string;
  /** Requests forwarded so far (the harness checks the bridge is in use). */
  readonly forwarded: () => number;
  close(): Promise<void>;
}

export async function startEc2Bridge(keystoneUrl: string, serviceUser: PasswordAuth): Promise<Ec2Bridge> {
  const target = new URL(keystoneUrl);
  let token: Token | undefined;
  let count = 0;
  const serviceToken = async (): Promise<string> => {
    // Renewed well before expiry; Keystone's default token lifetime is an hour.
    if (!token || token.expiresAt - Date.now() < 10 * 60_000) token = await passwordToken(keystoneUrl, serviceUser);
    return token.id;
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        try {
          const headers: Record<string, string> = {};
          for (const [k, v] of Object.entries(req.headers)) {
            if (
              v === undefined ||
              k === 'host' ||
              k === 'connection' ||
              k === 'content-length' ||
              k === 'transfer-encoding'
            )
              continue;
            headers[k] = Array.isArray(v) ? v.join(', ') : v;
          }
          // Only ec2tokens gets the service token: Heat also sends the URL on to its clients (X-Auth-URL), and their
          // own tokens must pass through untouched.
          if ((req.url ?? '').split('?')[0]!.endsWith('/ec2tokens')) headers['x-auth-token'] = await serviceToken();
          const method = req.method ?? 'GET';
          const upstream = await fetch(`${target.origin}${req.url ?? '/'}`, {
            method,
            headers,
            ...(method === 'GET' || method === 'HEAD' ? {} : { body: Buffer.concat(chunks) }),
            signal: AbortSignal.timeout(30_000),
          });
          const body = Buffer.from(await upstream.arrayBuffer());
          count++;
          const out: Record<string, string> = {};
          upstream.headers.forEach((value, key) => {
            if (
              key !== 'content-length' &&
              key !== 'content-encoding' &&
              key !== 'transfer-encoding' &&
              key !== 'connection'
            )
              out[key] = value;
          });
          res.writeHead(upstream.status, { ...out, 'content-length': String(body.length) });
          res.end(body);
        } catch (err) {
          res.writeHead(502, { 'content-type': 'text/plain' });
          res.end(`ec2 bridge: ${(err as Error).message}`);
        }
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${target.pathname.replace(/\/$/, '')}`,
    forwarded: () => count,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
