import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readdir, readFile, rename, stat } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { errorMessage } from '../../errors.js';
import { redactUrl } from '../../log/redact.js';
import { HookFailure, type HookContext } from '../contract.js';
import { runTool } from '../kit/run-tool.js';
import { makeDirs, removeFiles, writeWorkFile } from '../kit/work-files.js';
import { lastLines } from './git-source.js';
import type { TarballSourceSpec } from './source-options.js';

// A tarball source: downloaded with the agent's HTTP client onto the disk as it arrives (bounded in size and time,
// retried after network errors and 5xx; never held in memory, since built-in hooks run inside the daemon), checked
// against its SHA-256 when one is given, and unpacked by GNU tar (which reads any compression it knows and refuses
// members that climb out with "..") into a directory of its own that replaces the last one only once it is complete.
// With a checksum, an unpacked copy of that same archive is used again without a download.

/** Archives larger than this are refused. */
export const MAX_TARBALL_BYTES = 256 * 1024 * 1024;
const DEFAULT_FETCH_TIMEOUT_SECONDS = 60;

export async function syncTarballSource(ctx: HookContext, source: TarballSourceSpec): Promise<void> {
  const stamp = `${source.dir}.sha256`;
  if (source.sha256 && (await readText(stamp)) === source.sha256 && (await isDir(source.dir))) {
    ctx.log.info('tarball already unpacked', { source: source.label, sha256: source.sha256 });
    return;
  }
  const partial = `${source.dir}.partial`;
  const archive = `${source.dir}.download`;
  await removeFiles(archive);
  await makeDirs(path.dirname(archive));
  try {
    await download(ctx, source, archive);
    const sha256 = await fileSha256(archive);
    if (source.sha256 && sha256 !== source.sha256)
      throw new HookFailure(
        `${source.label}: the tarball ${redactUrl(source.url)} has SHA-256 ${sha256}, not the ${source.sha256} the deployment gives: not unpacked`,
      );
    await removeFiles(partial, stamp);
    await makeDirs(partial);
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

/** The SHA-256 of a file, read as a stream. */
async function fileSha256(file: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(file), hash);
  return hash.digest('hex');
}

/** The tarball, written to `archive` (a name with nothing there) as it arrives. */
async function download(ctx: HookContext, source: TarballSourceSpec, archive: string): Promise<void> {
  const shown = redactUrl(source.url);
  const timeout = Number(ctx.env.HEAT_CHEF_FETCH_TIMEOUT);
  ctx.log.info('downloading tarball', { source: source.label, url: shown });
  // Loaded only by a run that downloads something.
  const { createHttpClient } = await import('../../http/client.js');
  const client = createHttpClient({
    defaultMaxBytes: MAX_TARBALL_BYTES,
    defaultRetries: 2,
    proxy: { config: {}, env: ctx.env },
  });
  let res;
  try {
    res = await client.download(
      {
        url: source.url,
        timeoutSeconds: Number.isFinite(timeout) && timeout > 0 ? timeout : DEFAULT_FETCH_TIMEOUT_SECONDS,
        retries: 2,
        maxBytes: MAX_TARBALL_BYTES,
        signal: ctx.signal,
      },
      archive,
    );
  } catch (err) {
    throw new HookFailure(`${source.label}: could not download ${shown}: ${errorMessage(err)}`);
  }
  if (res.statusCode < 200 || res.statusCode > 299)
    throw new HookFailure(`${source.label}: could not download ${shown}: the server answered HTTP ${res.statusCode}`);
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
