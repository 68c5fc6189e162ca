import { isJsonObject } from '../util/json-merge.js';
import { setSecrets } from '../log/redact.js';
import { inputText, parseDeployment, secretInputTexts, type Deployment } from '../heat/deployment.js';
import { HookFailure, type HookDeployment } from './contract.js';
import type { HookLog } from './kit/hook-log.js';

// The deployment a hook works on, read with the agent's own model and rules (one id rule, one input list), so a
// deployment the agent accepted is one its hooks accept.

export function hookDeployment(dep: Deployment): HookDeployment {
  const { document } = dep;
  const options = isJsonObject(document.options) ? document.options : {};
  const created = document.creation_time;
  return {
    ...dep,
    config: document.config,
    options,
    ...(typeof created === 'string' ? { creationTime: created } : {}),
  };
}

/** The deployment from a hook's stdin text; `acceptsNoId`: an object without an id is read with the id "". */
export function parseHookInput(text: string, acceptsNoId = false): HookDeployment {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw new HookFailure(
      `the hook's stdin is not JSON (${(err as Error).message}): it expects one deployment object from the agent`,
    );
  }
  const parsed = parseDeployment(data, { idOptional: acceptsNoId });
  if (!parsed.ok) throw new HookFailure(`the hook cannot run this deployment: ${parsed.reason}`);
  // A hook run as its own executable has its own logger: it scrubs the secret inputs of the one deployment it runs.
  setSecrets('hook deployment', secretInputTexts(parsed.deployment));
  return hookDeployment(parsed.deployment);
}

/** The inputs as [name, value] pairs in order; a missing value is an empty string, as upstream. */
export function inputEntries(deployment: HookDeployment): Array<[string, unknown]> {
  return deployment.inputs.map((input) => [input.name, input.value === undefined ? '' : input.value]);
}

/** The inputs as one object (a later input of the same name wins); safe for any name, `__proto__` included. */
export function inputValues(deployment: HookDeployment): Record<string, unknown> {
  return Object.fromEntries(inputEntries(deployment));
}

/**
 * Environment variables for the inputs: prefix + name = the value as text. Names or values the kernel cannot carry
 * (empty, "=", NUL) are left out with a warning instead of failing the whole start.
 */
export function inputEnv(deployment: HookDeployment, log: HookLog, prefix = ''): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of inputEntries(deployment)) {
    const text = inputText(value);
    if (name === '' || name.includes('=') || name.includes('\0') || text.includes('\0')) {
      log.warn('input cannot be an environment variable; left out', { input: JSON.stringify(name) });
      continue;
    }
    env[prefix + name] = text;
  }
  return env;
}
