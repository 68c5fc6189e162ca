import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { create } from 'tar';
import { writeFileAtomic } from '../util/atomic-write.js';
import type { BundleEntry } from './bundle-entry.js';

// The bundle as one gzipped tarball: the entries are written under a private staging directory (0700) in one top
// directory, packed (portable: no owner names, no user ids) and the tarball put in place atomically, 0600 (it says
// much about the server, if nothing secret).

export async function writeTarball(file: string, top: string, entries: readonly BundleEntry[]): Promise<void> {
  const stage = await mkdtemp(path.join(os.tmpdir(), 'oca-collect-logs-'));
  try {
    for (const entry of entries) {
      const target = path.join(stage, top, entry.name);
      // Entry names come from the bundle's own code and file names it listed: never above its top directory.
      if (!target.startsWith(path.join(stage, top) + path.sep)) throw new Error(`bundle entry ${entry.name} escapes`);
      await mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
      await writeFile(target, entry.text, { mode: 0o600 });
    }
    const chunks: Buffer[] = [];
    const packed = create({ gzip: true, cwd: stage, portable: true }, [top]);
    for await (const chunk of packed) chunks.push(Buffer.from(chunk as Uint8Array));
    await writeFileAtomic(file, Buffer.concat(chunks), { mode: 0o600 });
  } finally {
    await rm(stage, { recursive: true, force: true });
  }
}
