import { errorMessage } from '../../errors.js';
import { redactUrl } from '../../log/redact.js';
import { HookFailure } from '../contract.js';
import type { InitRun } from './run-state.js';

// A file's "source" or an archive of "sources", fetched with the agent's HTTP client: bounded in time (each read) and
// size, retried after network errors and 5xx, and any failure stops the run naming the resource (heat-cfntools ran
// curl and carried on, writing an error page where the file should be).

/** Archives and files larger than this are refused rather than held in memory. */
export const MAX_DOWNLOAD_BYTES = 256 * 1024 * 1024;

export async function download(run: InitRun, url: string, resource: string): Promise<Buffer> {
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
  let res;
  try {
    res = await (
      await run.http()
    ).request({
      url,
      timeoutSeconds: run.fetchTimeoutSeconds,
      retries: 2,
      maxBytes: MAX_DOWNLOAD_BYTES,
      signal: run.ctx.signal,
    });
  } catch (err) {
    throw new HookFailure(`cfn-init: ${resource}: could not download ${shown}: ${errorMessage(err)}`);
  }
  if (res.statusCode < 200 || res.statusCode > 299) {
    throw new HookFailure(
      `cfn-init: ${resource}: could not download ${shown}: the server answered HTTP ${res.statusCode}`,
    );
  }
  return res.body;
}
