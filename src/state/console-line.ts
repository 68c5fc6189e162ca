import { constants, promises as fs } from 'node:fs';
import type { Logger } from '../log/logger.js';
import { hasResult } from './machine.js';
import type { DeploymentRecord, DeploymentState } from './store.js';

// [agent] console: one line per deployment state change on a console (e.g. /dev/console), so that
// `openstack console log show` tells a user what happened without logging in. Best effort: the file is opened
// non-blocking for each line (a console nobody reads must never hold up the pass), a failure is logged once per path
// and process, and never reaches the caller. Only the name, id, states and status code go out: no inputs, no output.

const warned = new Set<string>();
/** Longest deployment name written; a console line stays one line. */
const MAX_NAME = 120;

/** The line for one transition, without the trailing newline. */
export function consoleLine(record: DeploymentRecord, from: DeploymentState | undefined): string {
  const status =
    record.statusCode !== undefined && hasResult(record.state) ? ` [status ${printable(record.statusCode, 16)}]` : '';
  return `os-config-agent: deployment ${printable(record.name, MAX_NAME)} (${printable(record.id, MAX_NAME)}) ${from ?? 'new'} -> ${record.state}${status}`;
}

/** Appends the line to `file`; resolves (never rejects) once written or given up. */
export async function writeConsoleLine(
  file: string,
  record: DeploymentRecord,
  from: DeploymentState | undefined,
  log: Logger,
): Promise<void> {
  const line = `${consoleLine(record, from)}\n`;
  try {
    // O_NONBLOCK: a FIFO without a reader fails at once (ENXIO) instead of waiting; O_NOCTTY: a tty never becomes
    // the agent's controlling terminal.
    const handle = await fs.open(
      file,
      constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NONBLOCK | constants.O_NOCTTY,
      0o644,
    );
    try {
      await handle.write(line);
    } finally {
      await handle.close();
    }
    if (warned.delete(file)) log.info({ console: file }, 'console line written again');
  } catch (err) {
    if (warned.has(file)) return;
    warned.add(file);
    log.warn(
      { console: file, reason: (err as NodeJS.ErrnoException).code ?? String(err) },
      'console line not written; later failures are not logged',
    );
  }
}

/** Control characters (a newline in a name would forge a second line) become '?'; long values are cut. */
function printable(text: string, max: number): string {
  // eslint-disable-next-line no-control-regex
  const clean = text.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
  return clean.length > max ? `${clean.slice(0, max - 1)}…` : clean;
}
