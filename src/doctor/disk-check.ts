import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { LoadedConfig } from '../config/load.js';
import { errorMessage } from '../errors.js';
import { fail, ok, skipped, warn, type CheckResult } from './check.js';

// Space and inodes where the agent writes its state: the metadata cache, its own state directory and the deployed
// directory. A full disk stops the cache write and the deployment records, so the agent repeats work or cannot
// signal. A directory not created yet is judged by the file system that will hold it.

export interface FsFigures {
  readonly freeBytes: number;
  readonly totalBytes: number;
  readonly freeInodes: number;
  /** 0 when the file system has no fixed inode count (btrfs, some network file systems). */
  readonly totalInodes: number;
}

export const FAIL_FREE_BYTES = 16 * 1024 * 1024;
export const WARN_FREE_BYTES = 256 * 1024 * 1024;
const FAIL_FREE_INODES = 64;
const WARN_FREE_FRACTION = 0.05;

/** The verdict on one file system's figures, and why. */
export function judgeSpace(f: FsFigures): { verdict: 'ok' | 'warn' | 'fail'; why: string } {
  const mib = (n: number) => `${Math.floor(n / (1024 * 1024))} MiB`;
  const space = `${mib(f.freeBytes)} free of ${mib(f.totalBytes)}`;
  const inodes = f.totalInodes > 0 ? `, ${f.freeInodes} of ${f.totalInodes} inodes free` : '';
  const why = `${space}${inodes}`;
  if (f.freeBytes < FAIL_FREE_BYTES || (f.totalInodes > 0 && f.freeInodes < FAIL_FREE_INODES))
    return { verdict: 'fail', why };
  const lowSpace =
    f.freeBytes < WARN_FREE_BYTES || (f.totalBytes > 0 && f.freeBytes / f.totalBytes < WARN_FREE_FRACTION);
  const lowInodes = f.totalInodes > 0 && f.freeInodes / f.totalInodes < WARN_FREE_FRACTION;
  return { verdict: lowSpace || lowInodes ? 'warn' : 'ok', why };
}

export async function diskChecks(loaded: LoadedConfig): Promise<CheckResult[]> {
  const c = loaded.config;
  const places: Array<[string, string]> = [
    ['cachedir', c.DEFAULT.cachedir],
    ['state_dir', c.agent.state_dir],
    ['deployed_dir', c.deploy.deployed_dir],
  ];
  return Promise.all(places.map(([name, dir]) => diskCheck(loaded, name, dir)));
}

async function diskCheck(loaded: LoadedConfig, name: string, dir: string): Promise<CheckResult> {
  const id = `disk.${name}`;
  if (dir === '') return skipped(id, `${name} is not set`);
  const shown = loaded.paths.unmap(dir);
  try {
    const at = await nearestExisting(dir);
    const st = await fs.statfs(at);
    const figures = {
      freeBytes: st.bavail * st.bsize,
      totalBytes: st.blocks * st.bsize,
      freeInodes: st.ffree,
      totalInodes: st.files,
    };
    const { verdict, why } = judgeSpace(figures);
    const cause = `${shown}: ${why}`;
    const fix = `free space or inodes on the file system holding ${shown} (old logs, container images, package caches)`;
    if (verdict === 'fail') return fail(id, `${cause}; writes there will fail`, fix);
    if (verdict === 'warn') return warn(id, `${cause}; running low`, fix);
    return ok(id, cause);
  } catch (err) {
    return fail(
      id,
      `${shown}: cannot read the file system's figures (${errorMessage(err)})`,
      `check that ${shown} or its parent exists and is readable`,
    );
  }
}

/** `dir`, or its closest ancestor that exists. */
async function nearestExisting(dir: string): Promise<string> {
  let at = dir;
  for (;;) {
    try {
      await fs.stat(at);
      return at;
    } catch (err) {
      const parent = path.dirname(at);
      if (parent === at) throw err;
      at = parent;
    }
  }
}
