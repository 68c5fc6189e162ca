import type * as Http from 'node:http';
import type * as Https from 'node:https';
import { createRequire } from 'node:module';

// One attempt of a request on the wire, with Node's own http and https: the request sent, redirects followed (up to
// five, each hop on the agent its route gives it), and the final answer's headers handed to the caller, who reads its
// body. The attempt ends when its signal aborts, whose reason is the error the caller sees (a timeout, a shutdown).
//
// Required, not imported: the ES module view of node:http reads every export, and on Node.js 22 its lazy WebSocket
// export loads undici (docs/build.md). node:https, and with it node:tls, is loaded by the first https: URL only.

const nodeRequire = createRequire(import.meta.url);
const http = nodeRequire('node:http') as typeof Http;
let https: typeof Https | undefined;

/** Statuses whose Location is followed; 300 too, as the agent always has: Keystone's root names its v3 URL so. */
const REDIRECTS = new Set([300, 301, 302, 303, 307, 308]);
const MAX_REDIRECTS = 5;
/** Headers that carry credentials: never sent on to another origin by a redirect. */
const CREDENTIAL_HEADERS = ['authorization', 'cookie', 'x-auth-token'];

export interface ExchangeSpec {
  readonly url: string;
  readonly method: string;
  readonly headers: Record<string, string>;
  readonly body: Buffer | undefined;
  /** PEM CA bundle for TLS; Node's store when undefined. */
  readonly ca: string | undefined;
  readonly rejectUnauthorized: boolean;
  readonly followRedirects: boolean;
  /** The agent for a hop to `url` (a proxy's, a zoned socket's); Node's global agent when undefined. */
  readonly agentFor: (url: string) => Http.Agent | undefined;
  /** Ends the attempt, body included; its reason is the error thrown. */
  readonly signal: AbortSignal;
}

export interface Exchange {
  /** The final answer; its body is still to be read (readBody, or as a stream). */
  readonly response: Http.IncomingMessage;
  /** The URL that answered (after redirects). */
  readonly url: string;
}

/** A failed attempt that had reused a kept-alive connection the other side had closed: the agent it came from. */
const staleConnections = new WeakMap<object, unknown>();

/** The agent of a connection found closed on reuse, when that is why `err`'s attempt failed before any answer. */
export function closedOnReuse(err: unknown): { agent: unknown } | undefined {
  return typeof err === 'object' && err !== null && staleConnections.has(err)
    ? { agent: staleConnections.get(err) }
    : undefined;
}

/** Sends the attempt and follows its redirects; resolves with the final answer's headers. */
export async function exchange(spec: ExchangeSpec): Promise<Exchange> {
  let url = spec.url;
  let method = spec.method;
  let headers = spec.headers;
  let body = spec.body;
  for (let hops = 0; ; hops++) {
    const response = await sendOnce(spec, url, method, headers, body);
    const location = response.headers.location;
    if (!spec.followRedirects || !REDIRECTS.has(response.statusCode ?? 0) || location === undefined)
      return { response, url };
    // A redirect's body is not read: a server could make it endless. Its connection goes with it.
    response.destroy();
    if (hops === MAX_REDIRECTS)
      throw Object.assign(new Error(`more than ${MAX_REDIRECTS} redirects`), { name: 'MaxRedirectsError' });
    const next = new URL(location, url);
    if (next.protocol !== 'http:' && next.protocol !== 'https:')
      throw Object.assign(new Error(`a redirect to a ${next.protocol} URL`), { name: 'RedirectProtocolError' });
    // 303 asks for a GET of the new place; the other redirects repeat the request as it was (RFC 9110 15.4).
    if (response.statusCode === 303 && method !== 'HEAD') {
      method = 'GET';
      body = undefined;
    }
    if (next.origin !== new URL(url).origin) headers = withoutCredentials(headers);
    url = next.href;
  }
}

function withoutCredentials(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(headers).filter(([name]) => !CREDENTIAL_HEADERS.includes(name.toLowerCase())),
  );
}

/** One request and its answer's headers. An error after they arrived destroys the answer, so its reader sees it. */
function sendOnce(
  spec: ExchangeSpec,
  url: string,
  method: string,
  headers: Record<string, string>,
  body: Buffer | undefined,
): Promise<Http.IncomingMessage> {
  const target = new URL(url);
  const transport = target.protocol === 'https:' ? (https ??= nodeRequire('node:https') as typeof Https) : http;
  return new Promise((resolve, reject) => {
    if (spec.signal.aborted) {
      reject(spec.signal.reason);
      return;
    }
    let response: Http.IncomingMessage | undefined;
    const request = transport.request(target, {
      method,
      headers: body === undefined ? headers : { ...headers, 'content-length': String(body.length) },
      agent: spec.agentFor(url),
      ...(spec.ca !== undefined ? { ca: spec.ca } : {}),
      rejectUnauthorized: spec.rejectUnauthorized,
    });
    const abort = () => {
      response?.destroy(spec.signal.reason as Error);
      request.destroy(spec.signal.reason as Error);
    };
    spec.signal.addEventListener('abort', abort, { once: true });
    request.on('close', () => spec.signal.removeEventListener('abort', abort));
    request.on('error', (err: Error) => {
      const failure = spec.signal.aborted ? (spec.signal.reason as Error) : err;
      if (response) {
        response.destroy(failure);
        return;
      }
      if (request.reusedSocket && (err as NodeJS.ErrnoException).code === 'ECONNRESET')
        staleConnections.set(failure, (request as Http.ClientRequest & { agent?: unknown }).agent);
      reject(failure);
    });
    request.on('response', (res: Http.IncomingMessage) => {
      response = res;
      // The reader attaches its own handlers; this one keeps an error before it does from ending the process.
      res.on('error', () => undefined);
      resolve(res);
    });
    request.end(body);
  });
}

/** The answer's body whole, or an error once it grows past `maxBytes` (the download is stopped there). */
export async function readBody(
  response: Http.IncomingMessage,
  signal: AbortSignal,
  overCap: (size: number) => Error,
  maxBytes: number,
): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of response as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > maxBytes) throw overCap(size);
      chunks.push(chunk);
    }
  } catch (err) {
    response.destroy();
    throw signal.aborted ? signal.reason : err;
  }
  return Buffer.concat(chunks, size);
}
