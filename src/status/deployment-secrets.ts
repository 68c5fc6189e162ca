import { readFileSync } from 'node:fs';
import { setSecrets } from '../log/redact.js';
import { readFileIfExists } from '../util/atomic-write.js';
import { turnBeforeRead } from '../util/sync-read-turns.js';
import { isJsonObject, type JsonObject } from '../util/json-merge.js';
import { inputText, isSecretInput, secretOutputTexts } from '../heat/deployment.js';
import type { StateStore } from '../state/store.js';

// The secrets of the deployments as their files hold them, for the commands that show them (status, collect-logs):
// the values of each deployment's secret inputs (deployed/<id>.json) and of its outputs under secret names
// (<id>.notify.json, an api_token a hook handed back). Registered before anything is shown, so a tail, an output, an
// error or a name that holds one shows [REDACTED], as the journal does.

/** The owner of the secrets `status` registers: every deployment it lists. */
const STATUS_OWNER = 'status-deployments';

/** The secret values of one deployment: its secret inputs, and its outputs named as secrets. */
export function deploymentSecrets(deployed: JsonObject | undefined, body: JsonObject | undefined): string[] {
  const inputs = Array.isArray(deployed?.inputs) ? deployed.inputs.filter(isJsonObject) : [];
  return [
    ...inputs.filter((i) => isSecretInput(String(i.name))).map((i) => inputText(i.value)),
    ...secretOutputTexts(body ?? {}),
  ];
}

/**
 * Read the secrets of the deployments `ids` and make them the ones `status` scrubs with. The files are read
 * synchronously, as the records are (util/sync-read-turns.ts).
 */
export async function registerDeploymentSecrets(store: StateStore, ids: readonly string[]): Promise<void> {
  const values: string[] = [];
  for (const [i, id] of ids.entries()) {
    await turnBeforeRead(i);
    values.push(...deploymentSecrets(readObjectNow(store.deployedPath(id)), readObjectNow(store.notifyPath(id))));
  }
  setSecrets(STATUS_OWNER, values);
}

function readObjectNow(file: string): JsonObject | undefined {
  try {
    return parseObject(readFileSync(file, 'utf8'));
  } catch {
    return undefined;
  }
}

/** A deployment's JSON file, or undefined when it is missing, unreadable or not an object. */
export async function readObject(file: string): Promise<JsonObject | undefined> {
  const text = await readFileIfExists(file).catch(() => undefined);
  return text === undefined ? undefined : parseObject(text);
}

function parseObject(text: string): JsonObject | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return isJsonObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}
