import { createHash } from 'node:crypto';
import { readdir, readFile, rename, stat } from 'node:fs/promises';
import path from 'node:path';
import { errorMessage } from '../../errors.js';
import type { HttpClient } from '../../http/types.js';
import { redactUrl } from '../../log/redact.js';
import { HookFailure, type HookContext } from '../contract.js';
import { runTool } from '../kit/run-tool.js';
import { makeDirs, removeFiles, writeWorkFile } from '../kit/work-files.js';
import { lastLines } from './git-source.js';
import type { TarballSourceSpec } from './source-options.js';

// A tarball source: downloaded with the agent's HTTP client (bounded in size and time, retried after network errors
// and 5xx), checked against its SHA-256 when one is given, and unpacked by GNU tar (which reads any compression it
// knows and refuses members that climb out with "..") into a directory of its own that replaces the last one only
// once it is complete. With a checksum, an unpacked copy of that same archive is used again without a download.

/** Archives larger than this are refused rather than held in memory. */
export const MAX_TARBALL_BYTES = 256 * 1024 * 1024;
const DEFAULT_FETCH_TIMEOUT_SECONDS = 60;

export async function syncTarballSource(ctx: HookContext, source: TarballSourceSpec): Promise<void> {
  const stamp = `${source.dir}.sha256`;
  if (source.sha256 && (await readText(stamp)) === source.sha256 && (await isDir(source.dir))) {
    ctx.log.info('tarball already unpacked', { source: source.label, sha256: source.sha256 });
    return;
  }
  const data = await download(ctx, source);
  const sha256 = createHash('sha256').update(data).digest('hex');
  if (source.sha256 && sha256 !== source.sha256)
    throw new HookFailure(
      `${source.label}: the tarball ${redactUrl(source.url)} has SHA-256 ${sha256}, not the ${source.sha256} the deployment gives: not unpacked`,
    );
  const partial = `${source.dir}.partial`;
  const archive = `${source.dir}.download`;
  await removeFiles(partial, archive, stamp);
  await makeDirs(partial);
  try {
    await writeWorkFile(archive, data, 0o600);
    const run = await runTool(
      ctx,
      { file: 'tar', args: ['-x', '--no-same-owner', '-f', archive, '-C', partial], env: ctx.env },
      `tar is not installed (PATH=${ctx.env.PATH ?? ''}): install the tar package, which the chef hook needs to unpack ${source.label}.`,
    );
    if (run.status !== 0)
      throw new HookFailure(
        `${source.label}: ${redactUrl(source.url)} could not be unpacked as a tarball (tar exited with status ${run.status})${lastLines(run.stderr)}`,
      );
    await removeFiles(source.dir);
    await rename(partial, source.dir);
    if (source.sha256) await writeWorkFile(stamp, source.sha256, 0o600);
  } finally {
    await removeFiles(partial, archive);
  }
}

/** The directory a tarball's content is read from: its one top-level directory, as most archives have one. */
export async function tarballRoot(dir: string): Promise<string> {
  const names = await readdir(dir);
  const [only] = names;
  if (names.length === 1 && only !== undefined && (await isDir(path.join(dir, only)))) return path.join(dir, only);
  return dir;
}

async function download(ctx: HookContext, source: TarballSourceSpec): Promise<Buffer> {
  const shown = redactUrl(source.url);
  const timeout = Number(ctx.env.HEAT_CHEF_FETCH_TIMEOUT);
  ctx.log.info('downloading tarball', { source: source.label, url: shown });
  // Loaded only by a run that downloads something: got is most of the hook's code.
  const { createHttpClient } = await import('../../http/client.js');
  const client: HttpClient = createHttpClient({
    defaultMaxBytes: MAX_TARBALL_BYTES,
    defaultRetries: 2,
    proxy: { config: {}, env: ctx.env },
  });
  let res;
  try {
    res = await client.request({
      url: source.url,
      timeoutSeconds: Number.isFinite(timeout) && timeout > 0 ? timeout : DEFAULT_FETCH_TIMEOUT_SECONDS,
      retries: 2,
      maxBytes: MAX_TARBALL_BYTES,
      signal: ctx.signal,
    });
  } catch (err) {
    throw new HookFailure(`${source.label}: could not download ${shown}: ${errorMessage(err)}`);
  }
  if (res.statusCode < 200 || res.statusCode > 299)
    throw new HookFailure(`${source.label}: could not download ${shown}: the server answered HTTP ${res.statusCode}`);
  return res.body;
}

async function readText(file: string): Promise<string | undefined> {
  return readFile(file, 'utf8').catch(() => undefined);
}

async function isDir(p: string): Promise<boolean> {
  return stat(p).then(
    (s) => s.isDirectory(),
    () => false,
  );
}
