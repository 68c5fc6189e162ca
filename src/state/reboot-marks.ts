import { promises as fs } from 'node:fs';
import path from 'node:path';
import { syncDirectory, writeFileAtomic } from '../util/atomic-write.js';
import { isSafeFileName } from '../util/safe-name.js';
import { stateError } from './errors.js';

// Which deployments await a reboot, known without reading every record: <state_dir>/awaiting-reboot/<id>, an empty
// file made durable before a record is written in awaiting-reboot and removed after it has left that state. The
// agent's start asks this at every run (reboot.ts), and reading 10,000 records for it was most of what a `run
// --one-time` that found nothing new did.
//
// The folder exists only complete: a state directory from a release without it, whose records may await a reboot
// with no mark, has none, and the start then reads every record and makes the folder (staged, then renamed into
// place) under the deploy lock, which every move of a record holds; until then no mark is made. A mark whose record
// is gone or has moved on (a crash between the record's write and the mark's removal) is only read for nothing.

export const REBOOT_MARKS_DIR = 'awaiting-reboot';

export class RebootMarks {
  constructor(readonly dir: string) {}

  /** Before a record is written in awaiting-reboot. Nothing while the folder does not exist (see above). */
  async mark(id: string): Promise<void> {
    if (!(await this.active())) return;
    try {
      await writeFileAtomic(path.join(this.dir, id), '', { mode: 0o600 });
    } catch (err) {
      throw stateError('write', path.join(this.dir, id), err);
    }
  }

  /** After a record has left awaiting-reboot, or is forgotten. */
  async unmark(id: string): Promise<void> {
    try {
      await fs.rm(path.join(this.dir, id), { force: true });
    } catch (err) {
      throw stateError('delete', path.join(this.dir, id), err);
    }
  }

  /** The marked deployments' ids; undefined when the folder does not exist (every record must then be read). */
  async ids(): Promise<string[] | undefined> {
    let names: string[];
    try {
      names = await fs.readdir(this.dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw stateError('list', this.dir, err);
    }
    return names.filter((n) => !n.startsWith('.') && isSafeFileName(n));
  }

  /**
   * Makes the folder with `ids` marked, from a reading of every record made under the deploy lock: staged beside it
   * and renamed into place, so a crash leaves no folder (and the next start reads every record again), never a
   * partial one.
   */
  async create(ids: readonly string[]): Promise<void> {
    const parent = path.dirname(this.dir);
    const prefix = `.${REBOOT_MARKS_DIR}-`;
    try {
      // Stagings a killed process left: no one else stages now (the caller holds the deploy lock).
      for (const name of await fs.readdir(parent))
        if (name.startsWith(prefix)) await fs.rm(path.join(parent, name), { recursive: true, force: true });
      const staging = await fs.mkdtemp(path.join(parent, prefix));
      await fs.chmod(staging, 0o700);
      for (const id of ids) await writeFileAtomic(path.join(staging, id), '', { mode: 0o600 });
      await syncDirectory(staging);
      await fs.rename(staging, this.dir).catch(async (err: NodeJS.ErrnoException) => {
        // Made meanwhile, which only a process without the lock could do: that one stands.
        await fs.rm(staging, { recursive: true, force: true });
        if (err.code !== 'EEXIST' && err.code !== 'ENOTEMPTY') throw err;
      });
      await syncDirectory(parent);
    } catch (err) {
      throw stateError('write', this.dir, err);
    }
  }

  private async active(): Promise<boolean> {
    try {
      return (await fs.lstat(this.dir)).isDirectory();
    } catch {
      return false;
    }
  }
}
