import { setSecrets } from '../log/redact.js';
import { isSecretName } from '../log/secret-names.js';
import { readFileIfExists } from '../util/atomic-write.js';
import { isJsonObject, type JsonObject } from '../util/json-merge.js';
import { inputText, isSecretInput } from '../heat/deployment.js';
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
    ...Object.entries(body ?? {})
      .filter(([name]) => !name.startsWith('deploy_') && isSecretName(name))
      .map(([, value]) => inputText(value)),
  ];
}

/** Read the secrets of the deployments `ids` and make them the ones `status` scrubs with. */
export async function registerDeploymentSecrets(store: StateStore, ids: readonly string[]): Promise<void> {
  const values: string[] = [];
  for (const id of ids) {
    const [deployed, body] = await Promise.all([readObject(store.deployedPath(id)), readObject(store.notifyPath(id))]);
    values.push(...deploymentSecrets(deployed, body));
  }
  setSecrets(STATUS_OWNER, values);
}

/** A deployment's JSON file, or undefined when it is missing, unreadable or not an object. */
export async function readObject(file: string): Promise<JsonObject | undefined> {
  const text = await readFileIfExists(file).catch(() => undefined);
  if (text === undefined) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return isJsonObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}
