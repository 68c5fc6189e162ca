import { errorMessage } from '../../errors.js';
import type { HttpDownload, HttpRequest } from '../../http/types.js';
import { redactUrl } from '../../log/redact.js';
import { HookFailure } from '../contract.js';
import type { InitRun } from './run-state.js';

// A file's "source" or an archive of "sources", fetched with the agent's HTTP client: bounded in time (each read) and
// size, retried after network errors and 5xx, and any failure stops the run naming the resource (heat-cfntools ran
// curl and carried on, writing an error page where the file should be). The body is written to a file as it arrives
// (a file's beside its target, an archive's in a private directory), so what the agent holds does not grow with it.

/** Archives and files larger than this are refused. */
export const MAX_DOWNLOAD_BYTES = 256 * 1024 * 1024;

/**
 * A file's source or an archive, written to `file` (a new name, made exclusively) as it arrives. A transport failure
 * or an answer other than 2xx stops the run, naming the resource.
 */
export async function downloadToFile(run: InitRun, url: string, resource: string, file: string): Promise<void> {
  const req = fetchRequest(run, url, resource);
  let res: HttpDownload;
  try {
    res = await (await run.http()).download(req, file);
  } catch (err) {
    throw notFetched(resource, url, errorMessage(err));
  }
  if (res.statusCode < 200 || res.statusCode > 299)
    throw notFetched(resource, url, `the server answered HTTP ${res.statusCode}`);
}

function fetchRequest(run: InitRun, url: string, resource: string): HttpRequest {
  const shown = redactUrl(url);
  let scheme: string;
  try {
    scheme = new URL(url).protocol;
  } catch {
    throw new HookFailure(`cfn-init: ${resource}: ${JSON.stringify(shown)} is not a URL`);
  }
  if (scheme !== 'http:' && scheme !== 'https:')
    throw new HookFailure(`cfn-init: ${resource}: only http and https URLs can be fetched, not ${shown}`);
  run.ctx.log.info('downloading', { resource, url: shown });
  return {
    url,
    timeoutSeconds: run.fetchTimeoutSeconds,
    retries: 2,
    maxBytes: MAX_DOWNLOAD_BYTES,
    ...(run.ctx.signal ? { signal: run.ctx.signal } : {}),
  };
}

function notFetched(resource: string, url: string, why: string): HookFailure {
  return new HookFailure(`cfn-init: ${resource}: could not download ${redactUrl(url)}: ${why}`);
}
