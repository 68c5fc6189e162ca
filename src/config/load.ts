import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { registerSecret } from '../log/redact.js';
import { createPathMapper, type PathMapper } from '../util/rooted-path.js';
import { interpolate, parseOsloIni, type IniDocument } from './oslo-ini.js';
import { DEFAULT_COLLECTORS, SCHEMA, SECTION_NAMES, sectionSpecs, type AgentConfig, type OptionSpec, type SectionName } from './options.js';

// Configuration is built once per (re)load, in layers, later wins:
//   built-in defaults < config files (in order) < command-line flags.
// The result is deeply frozen and handed to every component; nothing reads a global.

export type CliValue = string | number | boolean | readonly string[];
export type CliOverrides = Partial<Record<SectionName, Record<string, CliValue>>>;

export interface ConfigSources {
  /** Root prefix for every absolute path (default '/'). */
  root?: string | undefined;
  /** Explicit --config-file values (as the instance sees them; mapped under root). */
  configFiles?: readonly string[] | undefined;
  /** --config-dir values: every *.conf inside, sorted. */
  configDirs?: readonly string[] | undefined;
  cli?: CliOverrides | undefined;
}

export interface ConfigProblem {
  severity: 'warning' | 'error';
  file?: string;
  line?: number;
  section?: string;
  option?: string;
  message: string;
}

export interface LoadedConfig {
  readonly config: AgentConfig;
  readonly paths: PathMapper;
  /** Config files actually read, in order (mapped paths). */
  readonly files: readonly string[];
  /** Files whose contents decide a reload (explicit or discovered main file). */
  readonly hashedFiles: readonly string[];
  readonly problems: readonly ConfigProblem[];
}

export const DEFAULT_CONFIG_FILE = '/etc/os-collect-config.conf';

export async function loadConfig(sources: ConfigSources = {}): Promise<LoadedConfig> {
  const paths = createPathMapper(sources.root);
  const problems: ConfigProblem[] = [];
  const files = await discoverFiles(sources, paths, problems);
  const raw: Record<string, Record<string, unknown>> = {};
  for (const section of SECTION_NAMES) {
    raw[section] = {};
    for (const [name, spec] of Object.entries(sectionSpecs(section))) raw[section][name] = spec.default;
  }

  // File layer.
  const docs: Array<{ file: string; doc: IniDocument }> = [];
  for (const file of files.all) {
    let text: string;
    try {
      text = await fs.readFile(file, 'utf8');
    } catch (err) {
      problems.push({ severity: 'error', file, message: `cannot read config file: ${(err as NodeJS.ErrnoException).code ?? String(err)}` });
      continue;
    }
    const { doc, problems: parseProblems } = parseOsloIni(text);
    for (const p of parseProblems) problems.push({ severity: 'error', file, line: p.line, message: p.message });
    docs.push({ file, doc });
  }
  for (const { file, doc } of docs) applyDocument(file, doc, raw, problems);

  // Command-line layer.
  for (const [section, values] of Object.entries(sources.cli ?? {}) as Array<[SectionName, Record<string, CliValue>]>) {
    for (const [name, value] of Object.entries(values)) {
      const spec = sectionSpecs(section)[name];
      if (!spec || value === undefined) continue;
      const converted = convert(spec, Array.isArray(value) ? (value as string[]).map(String) : [String(value)]);
      if (converted.ok) raw[section]![name] = converted.value;
      else problems.push({ severity: 'error', section, option: name, message: `command line: ${converted.error}` });
    }
  }

  const collectors = normaliseCollectors(raw.DEFAULT!.collectors as readonly string[], problems);
  raw.DEFAULT!.collectors = collectors;
  // Upstream: --force implies --one-time.
  if (raw.DEFAULT!.force === true) raw.DEFAULT!.one_time = true;

  // Map paths under the root and register secrets for scrubbing.
  for (const section of SECTION_NAMES) {
    for (const [name, spec] of Object.entries(sectionSpecs(section))) {
      const value = raw[section]![name];
      if (spec.secret && typeof value === 'string') registerSecret(value);
      if (!spec.path) continue;
      if (typeof value === 'string' && value !== '') raw[section]![name] = paths.map(value);
      else if (Array.isArray(value)) raw[section]![name] = value.map((v: string) => paths.map(v));
    }
  }

  return {
    config: deepFreeze(raw) as unknown as AgentConfig,
    paths,
    files: Object.freeze([...files.all]),
    hashedFiles: Object.freeze([...files.hashed]),
    problems: Object.freeze(problems),
  };
}

async function discoverFiles(
  sources: ConfigSources,
  paths: PathMapper,
  problems: ConfigProblem[],
): Promise<{ all: string[]; hashed: string[] }> {
  const all: string[] = [];
  let hashed: string[] = [];
  if (sources.configFiles && sources.configFiles.length > 0) {
    for (const f of sources.configFiles) {
      const mapped = paths.map(path.resolve(f));
      if (await isFile(mapped)) all.push(mapped);
      else problems.push({ severity: 'error', file: mapped, message: 'config file not found' });
    }
    hashed = [...all];
  } else {
    // oslo.config's default search when no project is given: ~/os-collect-config.conf, then /etc.
    const candidates = [path.join(os.homedir(), 'os-collect-config.conf'), DEFAULT_CONFIG_FILE].map((f) => paths.map(f));
    for (const candidate of candidates) {
      if (await isFile(candidate)) {
        all.push(candidate);
        hashed = [candidate];
        const confD = `${candidate}.d`;
        all.push(...(await confFilesIn(confD)));
        break;
      }
    }
  }
  for (const dir of sources.configDirs ?? []) all.push(...(await confFilesIn(paths.map(path.resolve(dir)))));
  return { all, hashed };
}

async function confFilesIn(dir: string): Promise<string[]> {
  try {
    const names = await fs.readdir(dir);
    return names.filter((n) => n.endsWith('.conf')).sort().map((n) => path.join(dir, n));
  } catch {
    return [];
  }
}

async function isFile(p: string): Promise<boolean> {
  try {
    return (await fs.stat(p)).isFile();
  } catch {
    return false;
  }
}

function applyDocument(file: string, doc: IniDocument, raw: Record<string, Record<string, unknown>>, problems: ConfigProblem[]): void {
  const lookupIn = (section: string) => (name: string) => {
    const own = doc.get(section)?.get(name);
    const fallback = doc.get('DEFAULT')?.get(name);
    const values = own ?? fallback;
    return values ? values[values.length - 1] : undefined;
  };
  for (const [sectionName, options] of doc) {
    if (!(sectionName in SCHEMA)) {
      problems.push({ severity: 'warning', file, section: sectionName, message: `unknown section [${sectionName}] ignored` });
      continue;
    }
    const section = sectionName as SectionName;
    for (const [name, values] of options) {
      const spec = sectionSpecs(section)[name];
      if (!spec) {
        const hint = name.includes('-') && sectionSpecs(section)[name.replace(/-/g, '_')] ? ` (write "${name.replace(/-/g, '_')}")` : '';
        problems.push({ severity: 'warning', file, section, option: name, message: `unknown option ignored${hint}` });
        continue;
      }
      const expanded = values.map((v) =>
        interpolate(v, lookupIn(section), (unknown) =>
          problems.push({ severity: 'warning', file, section, option: name, message: `"$${unknown}" names no option and is kept literally (write $$ for a literal $)` }),
        ),
      );
      const converted = convert(spec, expanded);
      if (converted.ok) raw[section]![name] = converted.value;
      else problems.push({ severity: 'error', file, section, option: name, message: `${converted.error}; keeping ${describe(raw[section]![name])}` });
    }
  }
}

type Converted = { ok: true; value: unknown } | { ok: false; error: string };

function convert(spec: OptionSpec<unknown>, values: readonly string[]): Converted {
  const last = values[values.length - 1] ?? '';
  switch (spec.kind) {
    case 'multi':
      return { ok: true, value: values.filter((v) => v !== '') };
    case 'str':
      return { ok: true, value: last };
    case 'bool': {
      const v = last.trim().toLowerCase();
      if (['true', '1', 'yes', 'on'].includes(v)) return { ok: true, value: true };
      if (['false', '0', 'no', 'off'].includes(v)) return { ok: true, value: false };
      return { ok: false, error: `"${last}" is not a boolean (true/false)` };
    }
    case 'float':
    case 'int': {
      const n = Number(last.trim());
      if (last.trim() === '' || !Number.isFinite(n)) return { ok: false, error: `"${last}" is not a number` };
      if (spec.kind === 'int' && !Number.isInteger(n)) return { ok: false, error: `"${last}" is not a whole number` };
      if (spec.min !== undefined && n < spec.min) return { ok: false, error: `${n} is below the minimum ${spec.min}` };
      return { ok: true, value: n };
    }
  }
}

function describe(value: unknown): string {
  return value === undefined ? 'it unset' : JSON.stringify(value);
}

/**
 * Collector names, validated. Unlike upstream (which fails on `collectors = ec2,cfn` and on a JSON list), a list
 * written on one line is split, because images in the field have rendered it that way.
 */
function normaliseCollectors(values: readonly string[], problems: ConfigProblem[]): string[] {
  const out: string[] = [];
  for (const value of values) {
    for (const piece of value.replace(/[[\]"']/g, ' ').split(/[\s,]+/)) {
      if (piece === '') continue;
      if (!(DEFAULT_COLLECTORS as readonly string[]).includes(piece)) {
        problems.push({ severity: 'error', section: 'DEFAULT', option: 'collectors', message: `unknown collector "${piece}" ignored (known: ${DEFAULT_COLLECTORS.join(', ')})` });
        continue;
      }
      out.push(piece);
    }
  }
  return out;
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value as Record<string, unknown>)) deepFreeze(v);
  }
  return value;
}

/** MD5 of the config files' contents, as upstream hashes them to decide a re-exec (here: an in-process reload). */
export async function hashConfigFiles(files: readonly string[]): Promise<string> {
  const hash = createHash('md5');
  for (const file of files) {
    try {
      hash.update(await fs.readFile(file));
    } catch {
      // Unreadable or missing files are skipped, as upstream does.
    }
  }
  return hash.digest('hex');
}
