import { parse as parseYaml } from 'yaml';
import { isJsonObject, type JsonObject } from '../../util/json-merge.js';
import { keysInOrder } from '../../util/json-key-order.js';
import { HookFailure } from '../contract.js';
import { ExactNumber } from '../../util/exact-number.js';

// docker-cmd's config read whole before any container starts: a map of container name → definition (upstream's
// form) or a list of definitions each with a `name`, in start order (start_order, then the order written, as
// upstream's stable sort). Everything is checked first, so a bad definition fails the deployment with nothing
// started; each value becomes exactly one argument, so no value can pass as an option or reach a shell.

export interface ContainerDef {
  /** The name given in the config (the container_name label; the container is named after it). */
  readonly name: string;
  readonly action: 'run' | 'exec';
  readonly exitCodes: readonly number[];
  readonly startOrder: number;
  readonly image: string;
  /** `command` as upstream splits it: a list as is, a string at whitespace. */
  readonly command: readonly string[];
  readonly options: Readonly<Record<string, unknown>>;
}

/**
 * Keys a definition may have; anything else is a mistake worth failing for. `name` is ignored in the mapping form, as
 * upstream ignored it (its own tests carry one).
 */
const KNOWN_KEYS = new Set([
  'name',
  'action',
  'exit_codes',
  'start_order',
  'image',
  'command',
  'detach',
  'env_file',
  'environment',
  'net',
  'pid',
  'privileged',
  'restart',
  'user',
  'volumes',
  'volumes_from',
]);
/** docker's own rule for a container name (at least two characters). */
const CONTAINER_NAME = /^[a-zA-Z0-9][a-zA-Z0-9_.-]+$/;
/** Leaves room for the random suffix a taken name gets, within what docker accepts. */
const MAX_NAME_CHARS = 200;

/** The containers in start order; [] for an empty config. Throws HookFailure naming the container and the cause. */
export function containerDefs(config: unknown): ContainerDef[] {
  const doc = typeof config === 'string' ? parseConfigText(config) : config;
  if (doc === null || doc === undefined || doc === '') return [];
  let entries: Array<[string, unknown]>;
  if (Array.isArray(doc)) {
    entries = doc.map((item, i) => {
      if (!isJsonObject(item)) throw new HookFailure(`container ${i + 1} of the config list is not a mapping`);
      const { name, ...rest } = item;
      if (typeof name !== 'string') throw new HookFailure(`container ${i + 1} of the config list has no "name"`);
      return [name, rest];
    });
  } else if (isJsonObject(doc)) {
    entries = keysInOrder(doc).map((name) => [name, doc[name]]);
  } else {
    throw new HookFailure(
      'the docker-cmd config must be a mapping of container name to definition (or a list of definitions)',
    );
  }
  const seen = new Set<string>();
  const defs = entries.map(([name, body]) => {
    if (seen.has(name)) throw new HookFailure(`container ${JSON.stringify(name)} is defined twice`);
    seen.add(name);
    return containerDef(name, body);
  });
  // Array.prototype.sort is stable: equal start_order keeps the order written, as upstream's sorted().
  return defs.sort((a, b) => a.startOrder - b.startOrder);
}

function parseConfigText(text: string): unknown {
  try {
    return parseYaml(text, { schema: 'core' }) as unknown;
  } catch (err) {
    throw new HookFailure(
      `the docker-cmd config is not valid YAML or JSON: ${(err as Error).message.split('\n')[0] ?? ''}`,
    );
  }
}

function containerDef(name: string, body: unknown): ContainerDef {
  const fail = (cause: string) => new HookFailure(`container ${JSON.stringify(name)}: ${cause}`);
  if (!CONTAINER_NAME.test(name) || name.length > MAX_NAME_CHARS) {
    throw fail(
      `not a valid container name (letters, digits, "_", "." and "-", starting with a letter or digit, 2 to ${MAX_NAME_CHARS} characters)`,
    );
  }
  if (!isJsonObject(body)) throw fail('its definition is not a mapping');
  for (const key of Object.keys(body)) {
    if (!KNOWN_KEYS.has(key)) throw fail(`unknown key "${key}" (known: ${[...KNOWN_KEYS].join(', ')})`);
  }
  const action = body.action ?? 'run';
  if (action !== 'run' && action !== 'exec')
    throw fail(`action must be "run" or "exec", not ${JSON.stringify(action)}`);
  const exitCodes = body.exit_codes ?? [0];
  if (!Array.isArray(exitCodes) || !exitCodes.every((c) => Number.isInteger(c)))
    throw fail('exit_codes must be a list of integers');
  const startOrder = body.start_order ?? 0;
  if (typeof startOrder !== 'number' || !Number.isFinite(startOrder)) throw fail('start_order must be a number');
  const image = body.image ?? '';
  if (typeof image !== 'string') throw fail('image must be a string');
  if (action === 'run' && (image === '' || image.startsWith('-'))) throw fail('a container to run needs an image');
  const command = commandWords(body.command, fail);
  if (action === 'exec') {
    const target = command[0];
    if (target === undefined) throw fail('exec needs a command starting with the container to run it in');
    if (!CONTAINER_NAME.test(target)) throw fail(`exec target ${JSON.stringify(target)} is not a valid container name`);
  }
  checkOptions(body, fail);
  return { name, action, exitCodes: exitCodes as number[], startOrder, image, command, options: body };
}

function commandWords(command: unknown, fail: (cause: string) => HookFailure): string[] {
  if (command === undefined || command === null || command === '') return [];
  if (typeof command === 'string')
    return noNul(
      command.split(/\s+/).filter((w) => w !== ''),
      'command',
      fail,
    );
  if (
    Array.isArray(command) &&
    command.every((w) => typeof w === 'string' || typeof w === 'number' || w instanceof ExactNumber)
  ) {
    return noNul(command.map(String), 'command', fail);
  }
  throw fail('command must be a string or a list of strings');
}

/** The option values, each of the type docker takes; a value with NUL could not be an argument. */
function checkOptions(body: JsonObject, fail: (cause: string) => HookFailure): void {
  for (const key of ['net', 'pid', 'restart']) {
    if (body[key] !== undefined && typeof body[key] !== 'string') throw fail(`${key} must be a string`);
  }
  if (body.user !== undefined && typeof body.user !== 'string' && typeof body.user !== 'number')
    throw fail('user must be a string or a number');
  if (body.detach !== undefined && typeof body.detach !== 'boolean') throw fail('detach must be true or false');
  const privileged = body.privileged;
  if (privileged !== undefined && typeof privileged !== 'boolean' && privileged !== 'true' && privileged !== 'false') {
    throw fail('privileged must be true or false');
  }
  for (const key of ['environment', 'volumes', 'volumes_from']) stringList(body[key], key, fail);
  if (typeof body.env_file !== 'string') stringList(body.env_file, 'env_file', fail);
  for (const value of Object.values(body)) {
    if (typeof value === 'string' && value.includes('\0')) throw fail('a value contains a NUL character');
  }
}

function stringList(value: unknown, key: string, fail: (cause: string) => HookFailure): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string' || v === null))
    throw fail(`${key} must be a list of strings`);
  return noNul(
    value.filter((v): v is string => typeof v === 'string' && v !== ''),
    key,
    fail,
  );
}

function noNul(words: string[], key: string, fail: (cause: string) => HookFailure): string[] {
  if (words.some((w) => w.includes('\0'))) throw fail(`${key} contains a NUL character`);
  return words;
}

/** The labels upstream puts on every container it runs (docker-cmd finds and removes its containers by them). */
export function containerLabels(def: ContainerDef, configId: string, stackId: string, resourceName: string): string[] {
  return [
    `deploy_stack_id=${stackId}`,
    `deploy_resource_name=${resourceName}`,
    `config_id=${configId}`,
    `container_name=${def.name}`,
    'managed_by=docker-cmd',
  ].flatMap((label) => ['--label', label]);
}

/** `docker run` options after the name and labels, then the image and command (upstream's order). */
export function runArguments(def: ContainerDef): string[] {
  const o = def.options;
  const args: string[] = [];
  if (o.detach ?? true) args.push('--detach=true');
  const envFiles = typeof o.env_file === 'string' ? [o.env_file] : listOf(o.env_file);
  for (const f of envFiles) args.push(`--env-file=${f}`);
  for (const v of listOf(o.environment)) args.push(`--env=${v}`);
  if (typeof o.net === 'string') args.push(`--net=${o.net}`);
  if (typeof o.pid === 'string') args.push(`--pid=${o.pid}`);
  if (o.privileged !== undefined) args.push(`--privileged=${String(o.privileged).toLowerCase()}`);
  if (typeof o.restart === 'string') args.push(`--restart=${o.restart}`);
  if (o.user !== undefined) args.push(`--user=${String(o.user)}`);
  for (const v of listOf(o.volumes)) args.push(`--volume=${v}`);
  for (const v of listOf(o.volumes_from)) args.push(`--volumes-from=${v}`);
  // The image cannot start with "-" (checked), so docker takes it as the image and everything after as the command.
  args.push(def.image, ...def.command);
  return args;
}

/** `docker exec` options, then the container (`target`, found by its labels) and the command. */
export function execArguments(def: ContainerDef, target: string): string[] {
  const o = def.options;
  const args: string[] = [];
  if (o.privileged !== undefined) args.push(`--privileged=${String(o.privileged).toLowerCase()}`);
  if (o.user !== undefined) args.push(`--user=${String(o.user)}`);
  args.push(target, ...def.command.slice(1));
  return args;
}

function listOf(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string' && v !== '') : [];
}

/**
 * The `environment` entries of the definitions as name/value pairs, so values of secret-looking names (PASSWORD,
 * TOKEN...) are masked wherever the hook logs the command line.
 */
export function environmentPairs(defs: readonly ContainerDef[]): Array<{ name: string; value: string }> {
  return defs
    .flatMap((def) => listOf(def.options.environment))
    .flatMap((entry) => {
      const at = entry.indexOf('=');
      return at > 0 ? [{ name: entry.slice(0, at), value: entry.slice(at + 1) }] : [];
    });
}
