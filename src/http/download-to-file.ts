import { open, type FileHandle } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { redactUrl } from '../log/redact.js';
import { attemptOptions, wholeRequestTimeout, type Attempts, type ClientParts } from './attempt.js';
import { proxyRefusal, requestFailure, tooLargeError } from './request-failure.js';
import { RETRY_ERROR_CODES, RETRY_STATUS_CODES, retryDelayMs } from './retry-policy.js';
import type { HttpDownload, HttpRequest } from './types.js';

// A body written to a file as it arrives (got's stream), for what is too large to hold in memory: an archive the
// daemon's cfn-init downloads would otherwise sit in the agent's heap, which the unit shields from the OOM killer.
// Each attempt is a stream of its own, retried here by the rule request() gives got (retry-policy.ts): network errors
// and 5xx, jittered delays, none that could not start within the whole request's timeout.

export async function downloadWithin(
  client: ClientParts,
  req: HttpRequest,
  file: string,
  a: Attempts,
): Promise<HttpDownload> {
  // A new file, never one found there (O_EXCL does not follow a link planted at the name); each attempt empties it.
  const out = await open(file, 'wx', 0o600);
  try {
    return await attemptsInto(client, req, out, a);
  } finally {
    await out.close();
  }
}

async function attemptsInto(
  client: ClientParts,
  req: HttpRequest,
  out: FileHandle,
  a: Attempts,
): Promise<HttpDownload> {
  const limit = req.retries ?? client.options.defaultRetries;
  for (let attempt = 1; ; attempt++) {
    let answer: HttpDownload | undefined;
    let failure: unknown;
    try {
      await out.truncate(0);
      answer = await downloadOnce(client, req, out, a);
    } catch (err) {
      failure = a.timedOut() ? requestFailure(wholeRequestTimeout(err), a.shown, a.timeoutMs) : err;
    }
    const reason = answer ? answer.statusCode : retryableCode(failure);
    const delay = retryDelayMs(attempt, client.options.retryBaseMs ?? 500, (client.options.random ?? Math.random)());
    const again =
      attempt <= limit &&
      reason !== undefined &&
      (typeof reason === 'string' || RETRY_STATUS_CODES.includes(reason)) &&
      delay < a.deadlineAt - performance.now();
    if (!again) {
      if (answer) return answer;
      throw failure;
    }
    client.options.log?.debug({ url: a.shown, attempt, delayMs: delay, reason }, 'retrying request');
    try {
      await sleep(delay, undefined, { signal: a.signal });
    } catch (err) {
      throw a.timedOut()
        ? requestFailure(wholeRequestTimeout(err), a.shown, a.timeoutMs)
        : requestFailure(err, a.shown, a.timeoutMs);
    }
  }
}

/** The network error code of a failed attempt worth another, else undefined. */
function retryableCode(failure: unknown): string | undefined {
  const cause = (failure as { cause?: { code?: unknown } }).cause;
  const code = cause?.code;
  return typeof code === 'string' && RETRY_ERROR_CODES.includes(code) ? code : undefined;
}

async function downloadOnce(
  client: ClientParts,
  req: HttpRequest,
  out: FileHandle,
  a: Attempts,
): Promise<HttpDownload> {
  const { zoned, shown, maxBytes, timeoutMs } = a;
  const route = zoned.zone === undefined ? await client.proxies?.begin(req.url, shown, timeoutMs) : undefined;
  const stream = client.base.stream(zoned.url, { ...attemptOptions(req, a, route), retry: { limit: 0 } });
  let response: { statusCode: number; headers: HttpDownload['headers']; url: string } | undefined;
  let bytes = 0;
  // got wraps the error a stream is destroyed with: the cap's own error is kept here and thrown as it is.
  let tooLarge: Error | undefined;
  const stop = (size: string) => {
    tooLarge ??= tooLargeError(shown, maxBytes, size);
    stream.destroy(tooLarge);
  };
  stream.once('response', (res: { statusCode: number; headers: HttpDownload['headers']; url: string }) => {
    response = res;
    const declared = Number(res.headers['content-length'] ?? 0);
    if (declared > maxBytes) stop(String(declared));
  });
  stream.on('downloadProgress', (progress: { transferred: number }) => {
    bytes = progress.transferred;
    if (bytes > maxBytes) stop(`at least ${bytes}`);
  });
  // A failed write (a full disk) is the file's failure, said as the system said it, not the request's.
  let writeFailed: unknown;
  try {
    await pipeline(stream, async (body: AsyncIterable<Buffer>) => {
      let at = 0;
      for await (const chunk of body)
        for (let done = 0; done < chunk.length;) {
          const { bytesWritten } = await out.write(chunk, done, chunk.length - done, at).catch((err: unknown) => {
            writeFailed = err;
            throw err;
          });
          done += bytesWritten;
          at += bytesWritten;
        }
    });
  } catch (err) {
    throw tooLarge ?? writeFailed ?? requestFailure(err, shown, timeoutMs, route);
  }
  if (tooLarge) throw tooLarge;
  if (!response) throw requestFailure(new Error('no response'), shown, timeoutMs, route);
  const refused = proxyRefusal(response.statusCode, shown, route);
  if (refused) throw refused;
  return {
    statusCode: response.statusCode,
    headers: response.headers,
    bytes,
    redactedUrl: redactUrl(zoned.zone !== undefined ? req.url : response.url || req.url),
  };
}
