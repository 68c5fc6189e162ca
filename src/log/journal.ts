import { fstatSync } from 'node:fs';

// journald's conventions for a service's stdout and stderr (sd-daemon(3), systemd.exec(5)): systemd connects them to
// the journal and says so in $JOURNAL_STREAM ("<device>:<inode>" of that stream); a line that starts with "<N>" is
// stored at syslog priority N (the prefix removed), so `journalctl -p warning` finds warnings. Anywhere else (a
// terminal, a pipe, a file) the prefix would only be noise.

/** Whether descriptor `fd` is the stream $JOURNAL_STREAM names. */
export function isJournalStream(fd: number, env: NodeJS.ProcessEnv = process.env): boolean {
  const named = env.JOURNAL_STREAM;
  if (!named) return false;
  const [dev, ino] = named.split(':');
  if (!dev || !ino) return false;
  try {
    const st = fstatSync(fd, { bigint: true });
    return st.dev === BigInt(dev) && st.ino === BigInt(ino);
  } catch {
    return false;
  }
}

/** syslog priorities of pino's levels: fatal is crit (2), error err (3), warn warning (4), info (6), debug (7). */
const PRIORITIES: Readonly<Record<string, number>> = { fatal: 2, error: 3, warn: 4, info: 6, debug: 7, trace: 7 };

/** The syslog priority of a pino line (its first field is the level: src/log/logger.ts); info when none is found. */
export function priorityOf(line: string): number {
  const prefix = '{"level":"';
  if (!line.startsWith(prefix)) return PRIORITIES.info!;
  const end = line.indexOf('"', prefix.length);
  return PRIORITIES[line.slice(prefix.length, end)] ?? PRIORITIES.info!;
}
