import { open, type FileHandle } from 'node:fs/promises';
import { acceptedHead, startAttempt, type Attempts, type ClientParts } from './attempt.js';
import { tooLargeError } from './request-failure.js';
import { NotTheRequest, withRetries } from './retry-loop.js';
import type { HttpDownload, HttpRequest } from './types.js';

// A body written to a file as it arrives, for what is too large to hold in memory: an archive the daemon's cfn-init
// downloads would otherwise sit in the agent's heap, which the unit shields from the OOM killer. Attempts are made and
// retried as a request's (retry-loop.ts); each one writes the file from its start.

export async function downloadWithin(
  client: ClientParts,
  req: HttpRequest,
  file: string,
  a: Attempts,
): Promise<HttpDownload> {
  // A new file, never one found there (O_EXCL does not follow a link planted at the name); each attempt empties it.
  const out = await open(file, 'wx', 0o600);
  try {
    return await withRetries(client, req, a, async (route) => {
      await out.truncate(0).catch((err: unknown) => {
        throw new NotTheRequest(err);
      });
      const run = startAttempt(client, req, a, route);
      try {
        const answer = await run.answer;
        const { statusCode, redactedUrl } = acceptedHead(req, a, route, answer);
        const bytes = await bodyInto(out, answer.response, run.signal, a);
        return { statusCode, headers: answer.response.headers, bytes, redactedUrl };
      } finally {
        run.end();
      }
    });
  } finally {
    await out.close();
  }
}

/** The body written to `out` from its start: its size. A failed write (a full disk) is said as the system said it. */
async function bodyInto(
  out: FileHandle,
  body: AsyncIterable<Buffer> & { destroy(): void },
  signal: AbortSignal,
  a: Attempts,
): Promise<number> {
  let at = 0;
  try {
    for await (const chunk of body) {
      if (at + chunk.length > a.maxBytes) throw tooLargeError(a.shown, a.maxBytes, `at least ${at + chunk.length}`);
      for (let done = 0; done < chunk.length;) {
        const { bytesWritten } = await out.write(chunk, done, chunk.length - done, at).catch((err: unknown) => {
          throw new NotTheRequest(err);
        });
        done += bytesWritten;
        at += bytesWritten;
      }
    }
  } catch (err) {
    body.destroy();
    throw signal.aborted && !(err instanceof NotTheRequest) ? signal.reason : err;
  }
  return at;
}
