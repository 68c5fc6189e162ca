import { promises as fs, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Logger } from '../log/logger.js';
import { isSafeFileName } from '../util/safe-name.js';
import { turnBeforeRead } from '../util/sync-read-turns.js';
import { DeploymentRecordError, stateError } from './errors.js';
import type { DeploymentRecord } from './record.js';

// Reading the records directory: every <id>.json with a safe id, and the errors of those that cannot be used, logged
// as the caller says. The files are read synchronously, with turns of the event loop between (sync-read-turns.ts).

/** How a record that cannot be used is logged: an error (the pass holds it), a warning (readers), or not at all. */
export type UnusableLogging = 'hold' | 'ignore' | 'quiet';

export async function listRecords(
  dir: string,
  parse: (id: string, text: string) => DeploymentRecord,
  log: Logger,
  mode: UnusableLogging,
): Promise<{ records: DeploymentRecord[]; unusable: DeploymentRecordError[] }> {
  let names: string[];
  try {
    names = await fs.readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { records: [], unusable: [] };
    throw stateError('list', dir, err);
  }
  const records: DeploymentRecord[] = [];
  const unusable: DeploymentRecordError[] = [];
  for (const [i, name] of names.entries()) {
    await turnBeforeRead(i);
    if (!name.endsWith('.json') || name.startsWith('.')) continue;
    const id = name.slice(0, -'.json'.length);
    if (!isSafeFileName(id)) continue;
    const text = readRecordText(path.join(dir, name));
    if (text === undefined) continue;
    try {
      records.push(parse(id, text));
    } catch (err) {
      if (!(err instanceof DeploymentRecordError)) throw err;
      unusable.push(err);
      logUnusable(log, mode, err);
    }
  }
  return { records, unusable };
}

/** A record's text; undefined when it went away since the listing (forgotten, pruned). */
function readRecordText(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw stateError('read', file, err);
  }
}

function logUnusable(log: Logger, mode: UnusableLogging, err: DeploymentRecordError): void {
  const id = err.deploymentId;
  const fields = {
    code: err.code,
    deploymentId: id,
    file: err.file,
    problem: err.problem,
    recovery: `os-config-agent deploy --forget ${id}`,
  };
  if (mode === 'ignore') log.warn(fields, 'deployment record cannot be used; ignored');
  else if (mode === 'hold') log.error(fields, 'deployment record cannot be used; deployment held');
}
