import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { errorMessage } from '../errors.js';
import { readCappedFile } from '../util/read-json-file.js';
import type { PathMapper } from '../util/rooted-path.js';
import { HupConfigError } from './cfn-errors.js';
import { cfnPath } from './cfn-paths.js';
import { emptyIni, iniValue, IniSyntaxError, readIni, type IniDocument, type IniSection } from './python-ini.js';

// cfn-hup's configuration, as heat-cfntools reads it: /etc/cfn/cfn-hup.conf ([main] stack and credential-file, and
// optionally region and interval), then the hooks of /etc/cfn/hooks.conf and of the hooks directory (-c, default
// /etc/cfn/hooks.d; its *.conf files in name order), every section but [main] being one hook: triggers, path, action
// and runas. Checked as a whole before anything runs: an unknown trigger, a path that is not
// Resources.<name>.Metadata[.key...] or a missing key is an error naming the file and section.

export const TRIGGERS = ['post.add', 'post.update', 'post.remove', 'service.restarted'] as const;
export type Trigger = (typeof TRIGGERS)[number];

export interface HupMain {
  readonly stack: string;
  /** The credential file as this process reaches it, and as the instance names it. */
  readonly credentialFile: string;
  readonly shownCredentialFile: string;
  readonly region: string;
  /** Minutes between checks of the built-in cfn-hup (AWS's unit; heat-cfntools' default 10). */
  readonly intervalMinutes: number;
}

export interface HupHook {
  readonly name: string;
  /** The file that defined it, for messages. */
  readonly file: string;
  readonly triggers: readonly Trigger[];
  readonly path: string;
  /** The resource the path names, and the keys below its Metadata ([] for the whole metadata). */
  readonly resource: string;
  readonly keys: readonly string[];
  readonly runas: string;
  readonly action: string;
  /** Seconds the action may run before it is killed (our addition: heat-cfntools waited for ever). */
  readonly timeoutSeconds: number;
}

export interface HupConfig {
  readonly main: HupMain;
  readonly hooks: readonly HupHook[];
  /** Every file read, as the instance names them. */
  readonly files: readonly string[];
}

const DEFAULT_INTERVAL_MINUTES = 10;
const DEFAULT_ACTION_TIMEOUT_SECONDS = 600;
const MAX_FILE_BYTES = 1024 * 1024;

export async function loadHupConfig(paths: PathMapper, hooksDir = '/etc/cfn/hooks.d'): Promise<HupConfig> {
  const mainFile = cfnPath(paths, 'hupConfig');
  const files = [mainFile];
  const mainText = await readText(mainFile, paths);
  if (mainText === undefined)
    throw new HupConfigError(
      `cannot read ${paths.unmap(mainFile)}: it does not exist (cfn-hup needs its [main] section)`,
    );
  const doc = emptyIni();
  parse(doc, mainText, mainFile, paths);
  const hookFiles = [cfnPath(paths, 'hooksConfig'), ...(await confFiles(paths.map(hooksDir)))];
  let hookFileCount = 0;
  for (const file of hookFiles) {
    const text = await readText(file, paths);
    if (text === undefined) continue;
    hookFileCount++;
    files.push(file);
    parse(doc, text, file, paths);
  }
  if (hookFileCount === 0) throw new HupConfigError(`no hook files: write /etc/cfn/hooks.conf or ${hooksDir}/*.conf`);
  const main = mainSection(doc, paths);
  const hooks = doc.sections.filter((s) => s.name !== 'main').map((s) => hookOf(doc, s, paths));
  if (hooks.length === 0)
    throw new HupConfigError(`no hooks: add a section to /etc/cfn/hooks.conf or ${hooksDir}/*.conf`);
  return { main, hooks, files: files.map((f) => paths.unmap(f)) };
}

/** The resources the hooks watch, each once, in the order the hooks name them. */
export function watchedResources(config: HupConfig): string[] {
  return [...new Set(config.hooks.map((h) => h.resource))];
}

function parse(doc: IniDocument, text: string, file: string, paths: PathMapper): void {
  try {
    readIni(doc, text, paths.unmap(file));
  } catch (err) {
    if (err instanceof IniSyntaxError) throw new HupConfigError(`cannot parse ${err.message}`);
    throw err;
  }
}

function mainSection(doc: IniDocument, paths: PathMapper): HupMain {
  const main = doc.sections.find((s) => s.name === 'main');
  if (!main) throw new HupConfigError('/etc/cfn/cfn-hup.conf has no [main] section');
  const stack = required(doc, main, 'stack');
  const credentialFile = required(doc, main, 'credential-file');
  const intervalText = value(doc, main, 'interval');
  const interval = intervalText === undefined ? DEFAULT_INTERVAL_MINUTES : Number(intervalText);
  if (!Number.isFinite(interval) || interval <= 0)
    throw new HupConfigError(
      `${where(main)}: interval ${JSON.stringify(intervalText)} is not a number of minutes above 0`,
    );
  return {
    stack,
    credentialFile: paths.map(credentialFile),
    shownCredentialFile: credentialFile,
    region: value(doc, main, 'region') ?? 'nova',
    intervalMinutes: interval,
  };
}

function hookOf(doc: IniDocument, section: IniSection, paths: PathMapper): HupHook {
  const at = where(section);
  const triggers = required(doc, section, 'triggers')
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '');
  if (triggers.length === 0) throw new HupConfigError(`${at}: triggers is empty`);
  for (const trigger of triggers)
    if (!(TRIGGERS as readonly string[]).includes(trigger))
      throw new HupConfigError(`${at}: unknown trigger "${trigger}" (known: ${TRIGGERS.join(', ')})`);
  const hookPath = required(doc, section, 'path');
  const [top, resource, field, ...keys] = hookPath.split('.');
  if (top !== 'Resources' || !resource || field !== 'Metadata' || keys.some((k) => k === ''))
    throw new HupConfigError(
      `${at}: path "${hookPath}" must be Resources.<resource>.Metadata, optionally followed by .<key>...`,
    );
  const timeoutText = value(doc, section, 'timeout');
  const timeout = timeoutText === undefined ? DEFAULT_ACTION_TIMEOUT_SECONDS : Number(timeoutText);
  if (!Number.isFinite(timeout) || timeout <= 0)
    throw new HupConfigError(`${at}: timeout ${JSON.stringify(timeoutText)} is not a number of seconds above 0`);
  return {
    name: section.name,
    file: paths.unmap(section.file),
    triggers: triggers as Trigger[],
    path: hookPath,
    resource,
    keys,
    runas: value(doc, section, 'runas') ?? 'root',
    action: required(doc, section, 'action'),
    timeoutSeconds: timeout,
  };
}

function where(section: IniSection): string {
  return `${section.file} [${section.name}]`;
}

function value(doc: IniDocument, section: IniSection, key: string): string | undefined {
  try {
    return iniValue(doc, section, key);
  } catch (err) {
    throw new HupConfigError(`${section.file}: ${errorMessage(err)}`);
  }
}

function required(doc: IniDocument, section: IniSection, key: string): string {
  const v = value(doc, section, key);
  if (v === undefined || v === '') throw new HupConfigError(`${where(section)}: "${key}" is missing`);
  return v;
}

async function confFiles(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir))
      .filter((f) => f.endsWith('.conf'))
      .sort()
      .map((f) => path.join(dir, f));
  } catch {
    return [];
  }
}

/**
 * The file's text; undefined when it does not exist. Unreadable or huge files are errors, and so is anything but a
 * regular file: a link to a FIFO or a device (which cfn-init's files can make) would otherwise hold the check forever
 * or fill the agent's memory.
 */
async function readText(file: string, paths: PathMapper): Promise<string | undefined> {
  const read = await readCappedFile(file, MAX_FILE_BYTES);
  if (read.ok) return read.bytes.toString('utf8');
  if (read.reason === 'missing') return undefined;
  if (read.reason === 'too-large') throw new HupConfigError(`${paths.unmap(file)} is larger than 1 MiB`);
  throw new HupConfigError(`cannot read ${paths.unmap(file)}: ${read.detail}`);
}
