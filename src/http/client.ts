import { readFileSync } from 'node:fs';
import got, { type Got } from 'got';
import { AgentError } from '../errors.js';
import { redactUrl } from '../log/redact.js';
import type { HttpClient, HttpRequest, HttpResponse } from './types.js';

// The agent's one HTTP client (got underneath): per-request timeouts, bounded retries of network errors and 5xx
// only, a response size cap, CA bundles, and an AbortSignal for prompt shutdown. Errors carry redacted URLs only.

export interface HttpClientOptions {
  readonly defaultMaxBytes: number;
  readonly defaultRetries: number;
  readonly userAgent?: string;
}

export class HttpError extends AgentError {
  override name = 'HttpError';
  constructor(message: string, readonly redactedUrl: string, code: 'ERR_HTTP' | 'ERR_HTTP_TOO_LARGE' = 'ERR_HTTP', options?: { cause?: unknown }) {
    super(code, message, options);
  }
}

export function createHttpClient(options: HttpClientOptions): HttpClient {
  const base: Got = got.extend({
    throwHttpErrors: false,
    followRedirect: true,
    decompress: true,
    headers: { 'user-agent': options.userAgent ?? 'os-config-agent' },
  });
  const caCache = new Map<string, string>();
  return {
    async request(req: HttpRequest): Promise<HttpResponse> {
      const maxBytes = req.maxBytes ?? options.defaultMaxBytes;
      const timeoutMs = Math.max(1, Math.round((req.timeoutSeconds ?? 10) * 1000));
      const shown = redactUrl(req.url);
      let ca: string | undefined;
      if (req.caFile) {
        ca = caCache.get(req.caFile);
        if (ca === undefined) {
          try {
            ca = readFileSync(req.caFile, 'utf8');
          } catch (err) {
            throw new HttpError(`cannot read CA file ${req.caFile}: ${(err as NodeJS.ErrnoException).code ?? err}`, shown, 'ERR_HTTP', { cause: err });
          }
          caCache.set(req.caFile, ca);
        }
      }
      try {
        const stream = base.stream(req.url, {
          method: req.method ?? 'GET',
          headers: req.headers ?? {},
          ...(req.body !== undefined ? { body: req.body } : {}),
          timeout: { connect: timeoutMs, socket: timeoutMs, response: timeoutMs, send: timeoutMs },
          retry: {
            limit: req.retries ?? options.defaultRetries,
            methods: ['GET', 'HEAD', 'PUT', 'POST', 'DELETE'],
            statusCodes: [500, 502, 503, 504],
            calculateDelay: ({ computedValue }) => (computedValue === 0 ? 0 : Math.min(computedValue, 2000) * (0.5 + Math.random() / 2)),
          },
          https: { ...(ca !== undefined ? { certificateAuthority: ca } : {}), rejectUnauthorized: !req.insecure },
          ...(req.signal ? { signal: req.signal } : {}),
        });
        return await readLimited(stream, maxBytes, shown);
      } catch (err) {
        if (err instanceof HttpError) throw err;
        const code = (err as { code?: string }).code;
        throw new HttpError(`request to ${shown} failed: ${code ?? (err as Error).message}`, shown, 'ERR_HTTP', { cause: err });
      }
    },
  };
}

type GotStream = ReturnType<Got['stream']>;

function readLimited(stream: GotStream, maxBytes: number, shown: string): Promise<HttpResponse> {
  return new Promise<HttpResponse>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let statusCode = 0;
    let headers: Record<string, string | string[] | undefined> = {};
    stream.on('response', (res: { statusCode: number; headers: Record<string, string | string[] | undefined> }) => {
      statusCode = res.statusCode;
      headers = res.headers;
      const declared = Number(res.headers['content-length']);
      if (Number.isFinite(declared) && declared > maxBytes) {
        stream.destroy();
        reject(new HttpError(`response from ${shown} is ${declared} bytes, over the ${maxBytes}-byte limit`, shown, 'ERR_HTTP_TOO_LARGE'));
      }
    });
    stream.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        stream.destroy();
        reject(new HttpError(`response from ${shown} is over the ${maxBytes}-byte limit`, shown, 'ERR_HTTP_TOO_LARGE'));
        return;
      }
      chunks.push(chunk);
    });
    stream.once('error', reject);
    stream.once('end', () => resolve({ statusCode, headers, body: Buffer.concat(chunks), redactedUrl: shown }));
  });
}
