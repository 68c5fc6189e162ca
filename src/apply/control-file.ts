import { readFileSync } from 'node:fs';
import { lookupId } from './account-lookup.js';
import { ControlFileError } from './apply-errors.js';

// `<template>.oac` control files: a YAML 1.1 mapping (so `0644` is octal, `yes`/`no` are booleans, as PyYAML reads
// them) with the keys mode, owner, group and allow_empty. Validation follows upstream; unlike upstream, any other key
// (including `body`, which crashed it) is a clear error, and a YAML syntax error is reported instead of a traceback.

export interface ControlSettings {
  /** Permission bits 0..0o777, when set. */
  mode: number | undefined;
  uid: number | undefined;
  gid: number | undefined;
  /** False: an empty rendering deletes the target instead of writing an empty file. */
  allowEmpty: boolean;
}

export const DEFAULT_CONTROL: ControlSettings = Object.freeze({
  mode: undefined,
  uid: undefined,
  gid: undefined,
  allowEmpty: true,
});

const KEYS = ['mode', 'owner', 'group', 'allow_empty'] as const;

export async function readControlFile(file: string | undefined): Promise<ControlSettings> {
  if (file === undefined) return DEFAULT_CONTROL;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ControlFileError(
      `cannot read control file ${file} (${(err as NodeJS.ErrnoException).code ?? String(err)})`,
      { cause: err },
    );
  }
  return parseControlFile(text, file);
}

export async function parseControlFile(text: string, file: string): Promise<ControlSettings> {
  let doc: unknown;
  const parseYaml = await loadYamlParser();
  try {
    doc = parseYaml(text, { version: '1.1' });
  } catch (err) {
    throw new ControlFileError(`${file}: not valid YAML (${(err as Error).message.split('\n')[0] ?? ''})`, {
      cause: err,
    });
  }
  if (doc === null || doc === undefined) return DEFAULT_CONTROL;
  if (typeof doc !== 'object' || Array.isArray(doc))
    throw new ControlFileError(`${file}: header is not a dict; write a mapping such as "mode: 0600"`);
  const raw = doc as Record<string, unknown>;
  for (const key of Object.keys(raw)) {
    if (!(KEYS as readonly string[]).includes(key)) {
      throw new ControlFileError(`${file}: unrecognised file control key '${key}' (known keys: ${KEYS.join(', ')})`);
    }
  }
  const out: ControlSettings = { ...DEFAULT_CONTROL };
  if (Object.hasOwn(raw, 'mode')) out.mode = checkMode(raw.mode, file);
  if (Object.hasOwn(raw, 'allow_empty')) {
    if (typeof raw.allow_empty !== 'boolean')
      throw new ControlFileError(
        `${file}: allow_empty requires a boolean (true/false), got ${describe(raw.allow_empty)}`,
      );
    out.allowEmpty = raw.allow_empty;
  }
  if (Object.hasOwn(raw, 'owner')) out.uid = await checkAccount('owner', 'passwd', raw.owner, file);
  if (Object.hasOwn(raw, 'group')) out.gid = await checkAccount('group', 'group', raw.group, file);
  return out;
}

type YamlModule = typeof import('yaml');

/**
 * The YAML parser, loaded on the first control file: most trees have none, and it is the largest module apply uses.
 * yaml is CommonJS: Node's import() gives its exports as named bindings too, but a code-split bundle gives them only
 * as the default export, so both are looked at.
 */
async function loadYamlParser(): Promise<YamlModule['parse']> {
  const mod = (await import('yaml')) as YamlModule & { default?: YamlModule };
  const parse = typeof mod.parse === 'function' ? mod.parse : mod.default?.parse;
  if (typeof parse !== 'function')
    throw new ControlFileError('the YAML parser could not be loaded; reinstall os-config-agent');
  return parse;
}

function checkMode(value: unknown, file: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    throw new ControlFileError(
      `${file}: mode ${describe(value)} is not numeric; write it as an unquoted octal number such as 0644`,
    );
  }
  if (value < 0 || value > 0o777)
    throw new ControlFileError(
      `${file}: mode 0${value.toString(8)} out of range (0 to 0777; setuid, setgid and sticky bits are not supported)`,
    );
  return value;
}

async function checkAccount(
  key: 'owner' | 'group',
  db: 'passwd' | 'group',
  value: unknown,
  file: string,
): Promise<number> {
  const dbName = db === 'passwd' ? 'passwd' : 'group';
  if (typeof value !== 'string' && !(typeof value === 'number' && Number.isInteger(value))) {
    throw new ControlFileError(`${file}: ${key} ${describe(value)} must be a name or a numeric id`);
  }
  const id = await lookupId(db, value);
  if (id === undefined)
    throw new ControlFileError(
      `${file}: ${key} '${String(value)}' not found in ${dbName} database; create it first or fix the name`,
    );
  return id;
}

function describe(value: unknown): string {
  return typeof value === 'string' ? `'${value}'` : (JSON.stringify(value) ?? String(value));
}
