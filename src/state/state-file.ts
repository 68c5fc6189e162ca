import { readFileIfExists, writeFileAtomic } from '../util/atomic-write.js';
import { isJsonObject, type JsonObject } from '../util/json-merge.js';
import { stateError } from './errors.js';

// The agent's own state files (deployment records, the upstream deployed/ files, queued signals): read, parsed when
// the file says it is version 1 and names the id of its file, and written atomically, 0600 (they hold credentials).

/** A state file's JSON object when it is version 1 and names `id` (records, queued signals); else undefined. */
export function parseStateObject(text: string, id: string): JsonObject | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  return isJsonObject(value) && value.version === 1 && value.id === id ? value : undefined;
}

/** A state file's text, or undefined when it does not exist; any other failure is a DeploymentStateError. */
export async function readStateFile(file: string): Promise<string | undefined> {
  try {
    return await readFileIfExists(file);
  } catch (err) {
    throw stateError('read', file, err);
  }
}

/** Writes a state file atomically, 0600; a failure is a DeploymentStateError naming the file. */
export async function writeStateFile(file: string, text: string): Promise<void> {
  try {
    await writeFileAtomic(file, text, { mode: 0o600 });
  } catch (err) {
    throw stateError('write', file, err);
  }
}
