import { selectConfigs } from './configsets.js';
import {
  checkKeys,
  describe,
  fail,
  isObject,
  objectAt,
  text,
  textList,
  toBoolean,
  type Json,
} from './metadata-values.js';

// AWS::CloudFormation::Init as the interpreter runs it: every config of the run read and checked before anything
// changes on the machine, so a typo in the last config does not leave the first one half applied. The keys and their
// meaning are heat-cfntools' (cfn_helper.py); a key heat-cfntools would silently ignore is an error here.

export { toBoolean } from './metadata-values.js';

export interface PackageEntry {
  readonly name: string;
  /** The versions asked for ([] = any). */
  readonly versions: readonly string[];
}
export interface PackageSet {
  readonly manager: string;
  readonly packages: readonly PackageEntry[];
}
export interface SourceEntry {
  readonly dir: string;
  readonly url: string;
}
export interface GroupEntry {
  readonly name: string;
  readonly gid?: string;
}
export interface UserEntry {
  readonly name: string;
  readonly uid?: string;
  readonly homeDir?: string;
  readonly groups: readonly string[];
}
export interface FileEntry {
  readonly path: string;
  /** The text to write (JSON content already serialised), or the link target of a symbolic link. */
  readonly content?: Buffer;
  readonly source?: string;
  /** The whole mode as given: type bits 0o120000 make a symbolic link. */
  readonly mode?: number;
  readonly owner?: string;
  readonly group?: string;
}
export interface CommandEntry {
  readonly name: string;
  /** A string runs through /bin/sh -c; a list is the argv, run directly. */
  readonly command: string | readonly string[];
  readonly test?: string;
  readonly cwd?: string;
  /** The whole environment of the command when given (upstream replaces, not extends). */
  readonly env?: Readonly<Record<string, string>>;
  readonly ignoreErrors: boolean;
}
export interface ServiceEntry {
  readonly manager: 'sysvinit' | 'systemd';
  readonly name: string;
  readonly enabled?: boolean;
  readonly ensureRunning?: boolean;
  /** What restarts it when changed by this run. */
  readonly files: readonly string[];
  readonly sources: readonly string[];
  readonly packages: readonly string[];
  readonly commands: readonly string[];
}
export interface InitConfig {
  readonly name: string;
  readonly packages: readonly PackageSet[];
  readonly sources: readonly SourceEntry[];
  readonly groups: readonly GroupEntry[];
  readonly users: readonly UserEntry[];
  readonly files: readonly FileEntry[];
  readonly commands: readonly CommandEntry[];
  readonly services: readonly ServiceEntry[];
}

export const SYMLINK_TYPE = 0o120000;
/** The package managers heat-cfntools knows and does something with (its "dpkg" key only ever logged a warning). */
export const PACKAGE_MANAGERS: readonly string[] = ['rpm', 'apt', 'yum', 'dnf', 'zypper', 'python', 'rubygems'];
const CONFIG_KEYS = ['packages', 'sources', 'groups', 'users', 'files', 'commands', 'services'];
const FILE_KEYS = ['content', 'source', 'mode', 'owner', 'group', 'encoding'];
const COMMAND_KEYS = ['command', 'test', 'cwd', 'env', 'ignoreErrors', 'waitAfterCompletion'];
const SERVICE_KEYS = ['enabled', 'ensureRunning', 'files', 'sources', 'packages', 'commands'];
const USER_KEYS = ['uid', 'groups', 'homeDir'];
const GROUP_KEYS = ['gid'];

/** Text in "mode" is octal ("000644", "120777"); a number is read by its digits, as YAML turns 0644 into 644. */
function parseMode(v: unknown, where: string): number {
  const digits = typeof v === 'number' && Number.isInteger(v) ? String(v) : v;
  if (typeof digits !== 'string' || !/^[0-7]{1,6}$/.test(digits.trim()))
    fail(where, `must be an octal mode such as "000644", not ${describe(v)}`);
  const mode = Number.parseInt(digits.trim(), 8);
  const type = mode & 0o170000;
  if (type !== 0 && type !== SYMLINK_TYPE)
    fail(where, `file type ${digits} is not supported (only 120xxx, a symbolic link)`);
  return mode;
}

function absolutePath(p: string, where: string): string {
  if (!p.startsWith('/')) fail(where, 'must be an absolute path');
  if (p.includes('\0')) fail(where, 'contains a NUL byte');
  if (p.split('/').includes('..')) fail(where, 'must not contain ".." (it would leave the directory it names)');
  return p;
}

function packages(v: unknown, where: string): PackageSet[] {
  return Object.entries(objectAt(v, where)).map(([manager, entries]) => ({
    manager: PACKAGE_MANAGERS.includes(manager)
      ? manager
      : fail(`${where}.${manager}`, `unknown package manager (known: ${PACKAGE_MANAGERS.join(', ')})`),
    packages: Object.entries(objectAt(entries, `${where}.${manager}`)).map(([name, versions]) => ({
      name,
      versions: textList(versions, `${where}.${manager}.${name}`),
    })),
  }));
}

function files(v: unknown, where: string): FileEntry[] {
  return Object.entries(objectAt(v, where)).map(([p, meta]) => {
    const at = `${where}.${p}`;
    absolutePath(p, at);
    const m = objectAt(meta, at);
    checkKeys(m, FILE_KEYS, at);
    if (!('content' in m) && !('source' in m)) fail(at, 'needs "content" or "source"');
    if ('content' in m && 'source' in m) fail(at, 'has both "content" and "source": give one');
    const encoding = m.encoding === undefined ? 'plain' : text(m.encoding, `${at}.encoding`);
    if (encoding !== 'plain' && encoding !== 'base64')
      fail(`${at}.encoding`, `must be "plain" or "base64", not ${JSON.stringify(encoding)}`);
    let content: Buffer | undefined;
    if ('content' in m) {
      // Text is written as it is; anything else as JSON with heat-cfntools' indent of 4.
      const raw = typeof m.content === 'string' ? m.content : JSON.stringify(m.content, null, 4);
      content = encoding === 'base64' ? Buffer.from(raw, 'base64') : Buffer.from(raw, 'utf8');
    }
    const mode = m.mode === undefined ? undefined : parseMode(m.mode, `${at}.mode`);
    if (mode !== undefined && (mode & SYMLINK_TYPE) === SYMLINK_TYPE && content === undefined)
      fail(at, 'a symbolic link (mode 120xxx) needs its target as "content"');
    return {
      path: p,
      ...(content !== undefined ? { content } : {}),
      ...(m.source !== undefined ? { source: text(m.source, `${at}.source`) } : {}),
      ...(mode !== undefined ? { mode } : {}),
      ...(m.owner !== undefined ? { owner: text(m.owner, `${at}.owner`) } : {}),
      ...(m.group !== undefined ? { group: text(m.group, `${at}.group`) } : {}),
    };
  });
}

function commands(v: unknown, where: string): CommandEntry[] {
  // Sorted by name, as heat-cfntools runs them (code point order).
  return Object.keys(objectAt(v, where))
    .sort()
    .map((name) => {
      const at = `${where}.${name}`;
      const c = objectAt((v as Json)[name], at);
      checkKeys(c, COMMAND_KEYS, at);
      if (c.command === undefined) fail(at, 'has no "command"');
      const command = Array.isArray(c.command)
        ? textList(c.command, `${at}.command`)
        : text(c.command, `${at}.command`);
      if (Array.isArray(command) && command.length === 0) fail(`${at}.command`, 'is an empty list');
      let env: Record<string, string> | undefined;
      if (c.env !== undefined && c.env !== null) {
        env = {};
        for (const [k, value] of Object.entries(objectAt(c.env, `${at}.env`))) {
          if (k === '' || k.includes('=') || k.includes('\0'))
            fail(`${at}.env`, `${JSON.stringify(k)} cannot be an environment variable name`);
          env[k] = text(value, `${at}.env.${k}`);
        }
      }
      return {
        name,
        command,
        ignoreErrors: toBoolean(c.ignoreErrors),
        ...(c.test !== undefined ? { test: text(c.test, `${at}.test`) } : {}),
        ...(c.cwd !== undefined ? { cwd: text(c.cwd, `${at}.cwd`) } : {}),
        ...(env ? { env } : {}),
      };
    });
}

function services(v: unknown, where: string): ServiceEntry[] {
  const out: ServiceEntry[] = [];
  for (const [manager, entries] of Object.entries(objectAt(v, where))) {
    if (manager !== 'sysvinit' && manager !== 'systemd')
      fail(`${where}.${manager}`, 'unknown service manager (known: sysvinit, systemd)');
    for (const [name, props] of Object.entries(objectAt(entries, `${where}.${manager}`))) {
      const at = `${where}.${manager}.${name}`;
      const s = objectAt(props, at);
      checkKeys(s, SERVICE_KEYS, at);
      const pkgs = Object.entries(objectAt(s.packages, `${at}.packages`)).flatMap(([m, names]) =>
        textList(names, `${at}.packages.${m}`).map((n) => `${m}:${n}`),
      );
      out.push({
        manager,
        name,
        ...(s.enabled !== undefined ? { enabled: toBoolean(s.enabled) } : {}),
        ...(s.ensureRunning !== undefined ? { ensureRunning: toBoolean(s.ensureRunning) } : {}),
        files: textList(s.files, `${at}.files`),
        sources: textList(s.sources, `${at}.sources`),
        packages: pkgs,
        commands: textList(s.commands, `${at}.commands`),
      });
    }
  }
  return out;
}

function config(name: string, v: unknown): InitConfig {
  const where = `config "${name}"`;
  const c = objectAt(v, where);
  checkKeys(c, CONFIG_KEYS, where);
  const groups = Object.entries(objectAt(c.groups, `${where} groups`)).map(([g, props]) => {
    const p = objectAt(props, `${where} groups.${g}`);
    checkKeys(p, GROUP_KEYS, `${where} groups.${g}`);
    return {
      name: g,
      ...(p.gid !== undefined && p.gid !== null ? { gid: text(p.gid, `${where} groups.${g}.gid`) } : {}),
    };
  });
  const users = Object.entries(objectAt(c.users, `${where} users`)).map(([u, props]) => {
    const at = `${where} users.${u}`;
    const p = objectAt(props, at);
    checkKeys(p, USER_KEYS, at);
    return {
      name: u,
      groups: textList(p.groups, `${at}.groups`),
      ...(p.uid !== undefined && p.uid !== null ? { uid: text(p.uid, `${at}.uid`) } : {}),
      ...(p.homeDir !== undefined && p.homeDir !== null ? { homeDir: text(p.homeDir, `${at}.homeDir`) } : {}),
    };
  });
  const sources = Object.entries(objectAt(c.sources, `${where} sources`)).map(([dir, url]) => ({
    dir: absolutePath(dir, `${where} sources.${dir}`),
    url: text(url, `${where} sources.${dir}`),
  }));
  return {
    name,
    groups,
    users,
    sources,
    packages: packages(c.packages, `${where} packages`),
    files: files(c.files, `${where} files`),
    commands: commands(c.commands, `${where} commands`),
    services: services(c.services, `${where} services`),
  };
}

/** The configs to run, in order (see configsets.ts), each read and checked. */
export function parseInit(init: unknown, selected?: string): InitConfig[] {
  if (!isObject(init) || Object.keys(init).length === 0)
    fail('metadata', 'AWS::CloudFormation::Init is empty or not an object (invalid metadata)');
  return selectConfigs(init, selected).map((name) => {
    if (name === 'configSets' || !Object.hasOwn(init, name))
      fail(`config "${name}"`, 'not found in the metadata (the configSet names it, or "config" is missing)');
    return config(name, init[name]);
  });
}
