import { createReadStream } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream';
import { writeFileAtomic } from '../../util/atomic-write.js';
import { HookFailure } from '../contract.js';
import { downloadToFile } from './download.js';
import { hostPath } from './host-path.js';
import type { SourceEntry } from './model.js';
import { forResource, mustRun, type InitRun } from './run-state.js';

// sources: an archive downloaded and unpacked into its directory. The type comes from the URL as heat-cfntools reads
// it: .tar.gz/.tgz, .tar.bz2/.tbz2, .tar, .zip, a lone .gz or .bz2 file, or a GitHub tarball/zipball URL. GNU tar
// and unzip unpack (both refuse members that climb out with ".."); a type that cannot be told is an error, where
// heat-cfntools did nothing.

export type ArchiveType = 'tgz' | 'tbz2' | 'tar' | 'zip' | 'gz' | 'bz2';

export function archiveType(url: string): ArchiveType | undefined {
  let p: string;
  try {
    const u = new URL(url);
    p = u.pathname.replace(/\/+$/, '');
    if (/(^|\.)github\.com$/.test(u.hostname)) {
      const kind = p.split('/').at(-2);
      if (kind === 'tarball') return 'tgz';
      if (kind === 'zipball') return 'zip';
    }
  } catch {
    return undefined;
  }
  const name = p.toLowerCase();
  if (name.endsWith('.tar.gz') || name.endsWith('.tgz')) return 'tgz';
  if (name.endsWith('.tar.bz2') || name.endsWith('.tbz2')) return 'tbz2';
  if (name.endsWith('.tar')) return 'tar';
  if (name.endsWith('.zip')) return 'zip';
  if (name.endsWith('.gz')) return 'gz';
  if (name.endsWith('.bz2')) return 'bz2';
  return undefined;
}

export async function applySources(run: InitRun, config: string, sources: readonly SourceEntry[]): Promise<void> {
  for (const source of sources) {
    const resource = `config "${config}" sources.${source.dir}`;
    await forResource(resource, () => applySource(run, source, resource));
  }
}

async function applySource(run: InitRun, source: SourceEntry, resource: string): Promise<void> {
  const type = archiveType(source.url);
  if (!type)
    throw new HookFailure(
      `cfn-init: ${resource}: cannot tell the archive type from the URL (it should end in .tar.gz, .tgz, .tar.bz2, .tbz2, .tar, .zip, .gz or .bz2)`,
    );
  const dest = hostPath(run, source.dir, resource, 'directory');
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'cfn-init-source-'));
  try {
    const base = decodeURIComponent(path.posix.basename(new URL(source.url).pathname)) || 'download';
    const archive = path.join(tmp, base.replace(/\//g, '_'));
    await downloadToFile(run, source.url, resource, archive);
    await mkdir(dest, { recursive: true, mode: 0o755 });
    await unpack(run, resource, type, archive, dest);
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
  run.changed.add(`source:${source.dir}`);
  run.ctx.log.info('source unpacked', { dir: source.dir, type });
}

/**
 * The decompressed bytes of a gzip file, read as they are needed. An error of the read or of the data ends them with
 * that error, and a reader that stops early (a full disk) ends the read too: pipeline() closes the file either way.
 */
async function gunzipped(file: string): Promise<AsyncIterable<Uint8Array>> {
  // Loaded here: every cfn command carries this module, and only a .gz source needs zlib (~2 ms to load).
  const { createGunzip } = await import('node:zlib');
  // The error reaches the reader through the stream it iterates; the callback has nothing left to do.
  return pipeline(createReadStream(file), createGunzip(), () => undefined);
}

async function unpack(run: InitRun, resource: string, type: ArchiveType, archive: string, dest: string): Promise<void> {
  const single = path.join(dest, path.basename(archive).replace(/\.(gz|bz2)$/i, ''));
  switch (type) {
    case 'tgz':
    case 'tbz2':
    case 'tar':
      // GNU tar recognises the compression of a file by itself.
      await mustRun(
        run,
        resource,
        { file: 'tar', args: ['-x', '-f', archive, '-C', dest] },
        'tar was not found: install the tar package',
      );
      return;
    case 'zip':
      await mustRun(
        run,
        resource,
        { file: 'unzip', args: ['-o', '-q', archive, '-d', dest] },
        'unzip was not found: install the unzip package',
      );
      return;
    case 'gz':
      // Streamed to the file: a few megabytes of gzip can expand to gigabytes, which in memory would take the agent
      // down with the deployment; on disk the limit is the disk's, as for tar (docs/hooks.md#cfn-init).
      await writeFileAtomic(single, await gunzipped(archive), { mode: 0o644 });
      return;
    case 'bz2':
      await mustRun(
        run,
        resource,
        { file: 'bunzip2', args: ['-f', archive] },
        'bunzip2 was not found: install the bzip2 package',
      );
      // Copied, not renamed: the temp directory is often another filesystem (a tmpfs /tmp), where rename fails.
      await writeFileAtomic(single, createReadStream(archive.replace(/\.bz2$/i, '')), { mode: 0o644 });
      return;
  }
}
