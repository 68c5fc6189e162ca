import { isSecretName } from '../log/secret-names.js';
import { deepClone, isJsonObject, setOwnKey, type JsonObject } from '../util/json-merge.js';
import { isSafeFileName } from '../util/safe-name.js';
import { numericValue } from '../util/exact-number.js';
import { pythonJsonDumps } from '../util/python-json.js';
import { reconvergeOption, type ReconvergeOption } from './reconverge-option.js';

// One element of Heat's `deployments` list (the software deployments of the server's metadata, as Heat's
// SoftwareDeployment resources write them), validated. The id names files, so it must be a safe file name; everything else is kept as Heat sent it, because hooks read the whole document.
//
// Inputs keep their JSON types. Upstream converts every String-typed input whose value is not a string with Python's
// str() (so true becomes "True" and null "None", bug #1333992) and leaves Number/Boolean inputs alone, which crashes
// the script hook. Here no value is rewritten: hooks receive what Heat sent and stringify for their tool themselves.

const DEPLOY_ACTIONS = ['CREATE', 'UPDATE', 'DELETE', 'SUSPEND', 'RESUME'] as const;
export const UNGROUPED = 'Heat::Ungrouped';

// Inputs whose values never appear in a log line or in status: the one secret-name rule (src/log/secret-names.ts:
// password, passwd, secret, token, credential, private, key, and known_hosts, how a deployment hands a hook SSH
// credentials), and deploy_signal_id (a pre-signed URL: whoever has it can signal). The agent registers their values
// for log scrubbing as soon as a deployment is read, and the hooks mask them in their own log.

/** True for an input whose value must not be logged. */
export function isSecretInput(name: string): boolean {
  return isSecretName(name) || name === 'deploy_signal_id';
}

/**
 * An input value as text (an environment variable, a fact, a script file): strings as they are, null or missing as
 * empty, everything else as JSON.
 */
/**
 * The values of a deployment's secret inputs (passwords, tokens, keys, the signal URL), as the logger must scrub
 * them. Parsing registers nothing: whoever holds the deployments registers their secrets under its own owner.
 */
export function secretInputTexts(deployment: Pick<Deployment, 'inputs'>): string[] {
  return deployment.inputs.filter((input) => isSecretInput(input.name)).map((input) => inputText(input.value));
}

/**
 * The values of a hook result's outputs named as secrets (a `db_password` output; deploy_stdout and the other
 * deploy_* keys are the protocol's own), as the logger must scrub them.
 */
export function secretOutputTexts(body: Readonly<Record<string, unknown>>): string[] {
  return Object.entries(body)
    .filter(([name]) => !name.startsWith('deploy_') && isSecretName(name))
    .map(([, value]) => inputText(value));
}

export function inputText(value: unknown): string {
  if (value === null || value === undefined) return '';
  return typeof value === 'string' ? value : pythonJsonDumps(value);
}

export interface DeploymentInput {
  readonly name: string;
  readonly value?: unknown;
  readonly type?: unknown;
}

export interface DeploymentOutput {
  readonly name: string;
  readonly error_output?: unknown;
}

export interface Deployment {
  readonly id: string;
  readonly name: string;
  readonly group: string;
  /** deploy_action, or CREATE when a hand-written deployment has none. */
  readonly action: string;
  readonly inputs: readonly DeploymentInput[];
  readonly outputs: readonly DeploymentOutput[];
  /** Per-deployment hook timeout from options.hook_timeout, in seconds (0: no limit). */
  readonly hookTimeoutSeconds?: number;
  /** options.reconverge_interval: re-run on an interval once finished (reconverge-option.ts). */
  readonly reconverge: ReconvergeOption;
  /** The document handed to the hook on stdin and recorded in deployed/<id>.json. */
  readonly document: JsonObject;
}

export type ParsedDeployment = { ok: true; deployment: Deployment; warnings: string[] } | { ok: false; reason: string };

export interface ParseOptions {
  /**
   * A deployment object without an id is read with the id "" (a hook run by hand, or by heat-agents' own tests, is
   * given no id: the hook protocol does not require one). The agent's own deployments always need one.
   */
  readonly idOptional?: boolean;
}

export function parseDeployment(raw: unknown, options: ParseOptions = {}): ParsedDeployment {
  if (!isJsonObject(raw)) return { ok: false, reason: 'the deployment is not a JSON object' };
  const missing = raw.id === undefined || raw.id === null;
  const id = missing && options.idOptional ? '' : raw.id;
  if (typeof id !== 'string' || (id === '' && !missing)) return { ok: false, reason: 'the deployment has no id' };
  if (id !== '' && !isSafeFileName(id as unknown))
    return {
      ok: false,
      reason: `deployment id ${JSON.stringify(String(id).slice(0, 80))} cannot be used as a file name`,
    };
  const warnings: string[] = [];
  const document = deepClone(raw);

  const inputs: DeploymentInput[] = [];
  if (raw.inputs !== undefined && raw.inputs !== null && !Array.isArray(raw.inputs))
    warnings.push('"inputs" is not a list; ignored');
  for (const item of Array.isArray(raw.inputs) ? raw.inputs : []) {
    if (isJsonObject(item) && typeof item.name === 'string') inputs.push(deepClone(item) as unknown as DeploymentInput);
    else warnings.push('an input without a string "name" was dropped');
  }
  const outputs: DeploymentOutput[] = [];
  if (raw.outputs !== undefined && raw.outputs !== null && !Array.isArray(raw.outputs))
    warnings.push('"outputs" is not a list; ignored');
  for (const item of Array.isArray(raw.outputs) ? raw.outputs : []) {
    if (isJsonObject(item) && typeof item.name === 'string')
      outputs.push(deepClone(item) as unknown as DeploymentOutput);
    else warnings.push('an output without a string "name" was dropped');
  }
  setOwnKey(document, 'inputs', inputs);
  setOwnKey(document, 'outputs', outputs);

  const group = typeof raw.group === 'string' && raw.group !== '' ? raw.group : UNGROUPED;
  const name = typeof raw.name === 'string' && raw.name !== '' ? raw.name : id;
  const actionValue = lastInput(inputs, 'deploy_action');
  const action = typeof actionValue === 'string' && actionValue !== '' ? actionValue : 'CREATE';
  if (!(DEPLOY_ACTIONS as readonly string[]).includes(action))
    warnings.push(`deploy_action ${JSON.stringify(action)} is not one Heat sends; the hook runs anyway`);

  const timeout = hookTimeout(raw.options, warnings);
  return {
    ok: true,
    deployment: {
      id,
      name,
      group,
      action,
      inputs,
      outputs,
      document,
      ...(timeout !== undefined ? { hookTimeoutSeconds: timeout } : {}),
      reconverge: reconvergeOption(raw.options),
    },
    warnings,
  };
}

/** The value of an input; the last one wins when a name repeats (upstream builds a dict from the list). */
export function inputValue(dep: Pick<Deployment, 'inputs'>, name: string): unknown {
  return lastInput(dep.inputs, name);
}

function lastInput(inputs: readonly DeploymentInput[], name: string): unknown {
  for (let i = inputs.length - 1; i >= 0; i--) if (inputs[i]!.name === name) return inputs[i]!.value;
  return undefined;
}

/** options.hook_timeout (seconds, number or numeric string, 0 = no limit) overrides [deploy] hook_timeout. */
function hookTimeout(options: unknown, warnings: string[]): number | undefined {
  if (!isJsonObject(options) || options.hook_timeout === undefined || options.hook_timeout === null) return undefined;
  const raw = options.hook_timeout;
  const n = numericValue(raw) ?? (typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : NaN);
  if (!Number.isFinite(n) || n < 0) {
    warnings.push(
      `options.hook_timeout ${pythonJsonDumps(raw)} is not a number of seconds; the configured hook_timeout applies`,
    );
    return undefined;
  }
  return n;
}

/** A copy of a deployment with a different group and config (component selection). */
export function withGroupAndConfig(dep: Deployment, group: string, config: unknown): Deployment {
  const document = deepClone(dep.document);
  setOwnKey(document, 'group', group);
  setOwnKey(document, 'config', deepClone(config));
  return { ...dep, group, document };
}
