import { realpathSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { errorMessage } from '../errors.js';
import type { Logger } from '../log/logger.js';

// Notices that the agent's installed files were replaced under the running daemon (a package upgrade or reinstall,
// often run by one of its own deployments). The old process must not go on for long: its code is split into chunks
// with content-hashed names that it loads on first use, and the upgrade has deleted the old ones, so the next lazy
// load would fail. The entry bundle stands for the whole installation: every install replaces it (dpkg writes a new
// file and renames it over the old one, so at least its inode changes even when the contents do not).
//
// Checked between loop passes only, never during a hook: ending the process then would end the hook's process
// group, which may be the very apt run doing the upgrade. Under systemd the loop then ends as on SIGTERM and the
// process exits 0, and Restart=always starts the new version; elsewhere nothing would start it again, so the agent
// only says, once per change, that it should be restarted.

export interface FileIdentity {
  readonly dev: number;
  readonly ino: number;
  readonly size: number;
  readonly mtimeMs: number;
}

/** What the loop does after a pass. */
export type UpgradeVerdict = 'unchanged' | 'restart' | 'warned';

/**
 * The file node runs as the agent's entry bundle: the real path of `argv1` (launchers and compatibility names are
 * links to it) when it is a built .mjs bundle; undefined when running from sources or from a name that is no path.
 */
export function runningBundle(argv1: string | undefined): string | undefined {
  if (argv1 === undefined || argv1 === '') return undefined;
  try {
    const real = realpathSync(argv1);
    return real.endsWith('.mjs') ? real : undefined;
  } catch {
    return undefined;
  }
}

/** True when systemd started this process as a service (it sets INVOCATION_ID; NOTIFY_SOCKET for Type=notify). */
export function startedBySystemd(env: NodeJS.ProcessEnv): boolean {
  return Boolean(env.INVOCATION_ID) || Boolean(env.NOTIFY_SOCKET);
}

export class InstalledFilesWatch {
  /** The identity last reported outside systemd: one warning per change, not one per pass. */
  private reported: FileIdentity;

  private constructor(
    private readonly file: string,
    private readonly initial: FileIdentity,
    private readonly underSystemd: boolean,
    private readonly log: Logger,
  ) {
    this.reported = initial;
  }

  /** Records the entry bundle's identity now; undefined (no checks) without a file or when it cannot be read. */
  static async start(
    file: string | undefined,
    underSystemd: boolean,
    log: Logger,
  ): Promise<InstalledFilesWatch | undefined> {
    if (file === undefined) return undefined;
    try {
      return new InstalledFilesWatch(file, await identityOf(file), underSystemd, log);
    } catch (err) {
      log.warn(
        { file, reason: errorMessage(err) },
        "cannot read the agent's own bundle; upgrades of the agent will not be noticed until it restarts",
      );
      return undefined;
    }
  }

  /** After a loop pass: has the bundle changed since the start, and what to do about it. */
  async check(): Promise<UpgradeVerdict> {
    let now: FileIdentity;
    try {
      now = await identityOf(this.file);
    } catch (err) {
      // Gone or unreadable between two passes (a removal in progress, a broken install): restarting into it could
      // only fail, so the running version goes on and the next pass looks again.
      this.log.debug(
        { file: this.file, reason: errorMessage(err) },
        "cannot read the agent's own bundle; checking again after the next pass",
      );
      return 'unchanged';
    }
    if (sameIdentity(now, this.initial)) return 'unchanged';
    const fields = { file: this.file, before: describe(this.initial), after: describe(now) };
    if (this.underSystemd) {
      this.log.info(fields, "the agent's files were upgraded; restarting to run the new version");
      return 'restart';
    }
    if (sameIdentity(now, this.reported)) return 'unchanged';
    this.reported = now;
    this.log.warn(fields, "the agent's files were upgraded; restart it to run the new version");
    return 'warned';
  }
}

async function identityOf(file: string): Promise<FileIdentity> {
  const st = await stat(file);
  return { dev: st.dev, ino: st.ino, size: st.size, mtimeMs: st.mtimeMs };
}

function sameIdentity(a: FileIdentity, b: FileIdentity): boolean {
  return a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeMs === b.mtimeMs;
}

function describe(id: FileIdentity): { inode: number; size: number; mtime: string } {
  return { inode: id.ino, size: id.size, mtime: new Date(id.mtimeMs).toISOString() };
}
