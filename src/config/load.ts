import { promises as fs, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setSecrets } from '../log/redact.js';
import { isRegularFile } from '../util/path-kind.js';
import { createPathMapper, type PathMapper } from '../util/rooted-path.js';
import { normaliseGroupIntervals } from './group-intervals.js';
import { interpolate, parseOsloIni, type IniDocument } from './oslo-ini.js';
import {
  DEFAULT_COLLECTORS,
  SCHEMA,
  SECTION_NAMES,
  sectionSpecs,
  type AgentConfig,
  type OptionSpec,
  type SectionName,
} from './options.js';

// Configuration is built once per (re)load, in layers, later wins:
//   built-in defaults < config files (in order) < command-line flags.
// As in oslo.config, a multi-valued option adds up across files (the command line replaces it), and `$name`
// references resolve to the referenced option's final value. The result is deeply frozen and handed to every
// component; nothing reads a global.

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
  /** A config file or directory that could not be read: a reload that meets one keeps the configuration in force. */
  unreadable?: boolean;
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
  const files = discoverFiles(sources, paths, problems);
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
      text = readFileSync(file, 'utf8');
    } catch (err) {
      problems.push({
        severity: 'error',
        file,
        message: `cannot read config file: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
        unreadable: true,
      });
      continue;
    }
    const { doc, problems: parseProblems } = parseOsloIni(text);
    for (const p of parseProblems) problems.push({ severity: 'error', file, line: p.line, message: p.message });
    docs.push({ file, doc: normaliseSections(doc) });
  }
  const cli = validCli(sources.cli);
  const resolve = createResolver(docs, cli);
  // oslo.config concatenates a multi-valued option across files (the first file's values replace the default).
  const multiFromFiles = new Set<string>();
  for (const { file, doc } of docs) applyDocument(file, doc, raw, problems, resolve, multiFromFiles);

  // Command-line layer: replaces file values (multi-valued options too); values are interpolated as oslo does.
  for (const [section, values] of Object.entries(cli) as Array<[SectionName, Record<string, CliValue>]>) {
    for (const [name, value] of Object.entries(values)) {
      const spec = specOf(section, name);
      if (!spec || value === undefined) continue;
      const strings = Array.isArray(value) ? (value as readonly unknown[]).map(String) : [String(value)];
      const expanded = strings.map((v) =>
        resolve.expand(v, section, (message) =>
          problems.push({ severity: 'warning', section, option: name, message: `command line: ${message}` }),
        ),
      );
      const converted = convert(spec, expanded);
      if (converted.ok) raw[section]![name] = converted.value;
      else
        problems.push({
          severity: 'error',
          section,
          option: name,
          message: `command line: ${converted.error}; keeping ${describe(raw[section]![name])}`,
        });
    }
  }

  const collectors = normaliseCollectors(raw.DEFAULT!.collectors as readonly string[], problems);
  raw.DEFAULT!.collectors = collectors;
  raw.deploy!.reconverge_interval = normaliseGroupIntervals(raw.deploy!.reconverge_interval as string[], problems);
  // Upstream: --force implies --one-time.
  if (raw.DEFAULT!.force === true) raw.DEFAULT!.one_time = true;

  // Map paths under the root.
  for (const section of SECTION_NAMES) {
    for (const [name, spec] of Object.entries(sectionSpecs(section))) {
      const value = raw[section]![name];
      if (!spec.path) continue;
      if (typeof value === 'string' && value !== '') raw[section]![name] = paths.map(value);
      else if (Array.isArray(value)) raw[section]![name] = value.map((v: string) => paths.map(v));
    }
  }

  const config = deepFreeze(raw) as unknown as AgentConfig;
  registerConfigSecrets(config);
  return {
    config,
    paths,
    files: Object.freeze([...files.all]),
    hashedFiles: Object.freeze([...files.hashed]),
    problems: Object.freeze(problems),
  };
}

/**
 * Scrub the secrets of this configuration from every log line and message (replacing those of the configuration
 * registered before: the one loaded last, or the one a failed reload keeps in force).
 */
export function registerConfigSecrets(config: AgentConfig): void {
  const values: string[] = [];
  for (const section of SECTION_NAMES) {
    const options = config[section] as unknown as Record<string, unknown>;
    for (const [name, spec] of Object.entries(sectionSpecs(section))) {
      const value = options[name];
      if (spec.secret && typeof value === 'string') values.push(value);
    }
  }
  setSecrets('config', values);
}

// Own-property lookups only: a section or option named "constructor" or "__proto__" is unknown, not Object's.
function isSection(name: string): name is SectionName {
  return Object.hasOwn(SCHEMA, name);
}

function specOf(section: SectionName, name: string): OptionSpec<unknown> | undefined {
  const specs = sectionSpecs(section);
  return Object.hasOwn(specs, name) ? specs[name] : undefined;
}

function validCli(cli: CliOverrides | undefined): CliOverrides {
  const out: CliOverrides = {};
  for (const [section, values] of Object.entries(cli ?? {})) if (isSection(section) && values) out[section] = values;
  return out;
}

/** oslo.config reads group names case-insensitively ([Heat] is [heat]); only DEFAULT must be upper case. */
function normaliseSections(doc: IniDocument): IniDocument {
  const out: IniDocument = new Map();
  for (const [name, options] of doc) {
    const key = name === 'DEFAULT' ? name : name.toLowerCase();
    const target = out.get(key) ?? new Map<string, string[]>();
    out.set(key, target);
    for (const [option, values] of options) target.set(option, [...(target.get(option) ?? []), ...values]);
  }
  return out;
}

// Synchronous, as the reads below: a few small files, and a short-lived command (os-apply-config, started many times
// per boot) then never starts libuv's thread pool or pays its round trips (~2 ms of each start).
function discoverFiles(
  sources: ConfigSources,
  paths: PathMapper,
  problems: ConfigProblem[],
): { all: string[]; hashed: string[] } {
  const all: string[] = [];
  // oslo.config's defaults when no project is given: the first of ~/os-collect-config.conf and
  // /etc/os-collect-config.conf, and, separately, the first existing os-collect-config.conf.d in the same places.
  // --config-file replaces the default file and --config-dir the default directory, each independently.
  const searchDirs = [os.homedir(), path.dirname(DEFAULT_CONFIG_FILE)];
  const base = path.basename(DEFAULT_CONFIG_FILE);
  if (sources.configFiles && sources.configFiles.length > 0) {
    for (const f of sources.configFiles) {
      const mapped = paths.map(path.resolve(f));
      if (isRegularFile(mapped)) all.push(mapped);
      else problems.push({ severity: 'error', file: mapped, message: 'config file not found', unreadable: true });
    }
  } else {
    for (const dir of searchDirs) {
      const candidate = paths.map(path.join(dir, base));
      if (isRegularFile(candidate)) {
        all.push(candidate);
        break;
      }
    }
  }
  // Upstream hashes only the config files (not directories) to decide a re-exec.
  const hashed = [...all];
  if (sources.configDirs && sources.configDirs.length > 0) {
    for (const dir of sources.configDirs) {
      const mapped = paths.map(path.resolve(dir));
      const found = confFilesIn(mapped);
      if (found) all.push(...found);
      else problems.push({ severity: 'error', file: mapped, message: 'config directory not found', unreadable: true });
    }
  } else {
    for (const dir of searchDirs) {
      const found = confFilesIn(paths.map(path.join(dir, `${base}.d`)));
      if (found) {
        all.push(...found);
        break;
      }
    }
  }
  return { all, hashed };
}

/** The *.conf files of a directory, sorted; undefined when it is not a readable directory. */
function confFilesIn(dir: string): string[] | undefined {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return undefined;
  }
  const out: string[] = [];
  for (const name of names.filter((n) => n.endsWith('.conf')).sort()) {
    const file = path.join(dir, name);
    if (isRegularFile(file)) out.push(file);
  }
  return out;
}

interface Resolver {
  /** Interpolate `$name` references in a value read for `section`; report each unresolvable name. */
  expand(value: string, section: SectionName, report: (message: string) => void): string;
}

const MAX_INTERPOLATION_DEPTH = 10;

/**
 * oslo.config substitutes an option's final value: the command line, else the last file that sets it, else its
 * default, itself interpolated. A plain name means the option of the same section, else the [DEFAULT] option of that
 * name; `group.name` names another section. Unset options and cycles are reported and left as written.
 */
function createResolver(docs: ReadonlyArray<{ doc: IniDocument }>, cli: CliOverrides): Resolver {
  const rawValue = (section: SectionName, name: string): string | undefined => {
    const fromCli = cli[section]?.[name];
    if (fromCli !== undefined)
      return Array.isArray(fromCli) ? (fromCli as readonly unknown[]).map(String).at(-1) : String(fromCli);
    for (let i = docs.length - 1; i >= 0; i--) {
      const values = docs[i]?.doc.get(section)?.get(name);
      if (values && values.length > 0) return values[values.length - 1];
    }
    const def = specOf(section, name)?.default;
    if (def === undefined) return undefined;
    return Array.isArray(def) ? (def as readonly unknown[]).map(String).at(-1) : String(def);
  };
  const target = (section: SectionName, ref: string): [SectionName, string] | undefined => {
    const dot = ref.indexOf('.');
    if (dot !== -1) {
      const group = ref.slice(0, dot);
      const normal = group === 'DEFAULT' ? group : group.toLowerCase();
      const option = ref.slice(dot + 1);
      return isSection(normal) && specOf(normal, option) ? [normal, option] : undefined;
    }
    if (specOf(section, ref)) return [section, ref];
    if (specOf('DEFAULT', ref)) return ['DEFAULT', ref];
    return undefined;
  };
  const expand = (value: string, section: SectionName, report: (message: string) => void, depth: number): string =>
    interpolate(
      value,
      (ref) => {
        const found = target(section, ref);
        if (!found) return undefined;
        const text = rawValue(found[0], found[1]);
        if (text === undefined || depth >= MAX_INTERPOLATION_DEPTH) return undefined;
        return expand(text, found[0], report, depth + 1);
      },
      (ref) =>
        report(
          `"$${ref}" names no option with a value (or refers to itself) and is kept literally (write $$ for a literal $)`,
        ),
    );
  return { expand: (value, section, report) => expand(value, section, report, 0) };
}

function applyDocument(
  file: string,
  doc: IniDocument,
  raw: Record<string, Record<string, unknown>>,
  problems: ConfigProblem[],
  resolve: Resolver,
  multiFromFiles: Set<string>,
): void {
  for (const [sectionName, options] of doc) {
    if (!isSection(sectionName)) {
      problems.push({
        severity: 'warning',
        file,
        section: sectionName,
        message: `unknown section [${sectionName}] ignored`,
      });
      continue;
    }
    const section = sectionName;
    for (const [name, values] of options) {
      const spec = specOf(section, name);
      if (!spec) {
        const underscored = name.replace(/-/g, '_');
        // Upstream silently ignores dashed keys; here they are still ignored (same behaviour) but named.
        const hint =
          underscored !== name && specOf(section, underscored)
            ? `; the option is spelled "${underscored}" in files`
            : '';
        problems.push({ severity: 'warning', file, section, option: name, message: `unknown option ignored${hint}` });
        continue;
      }
      const expanded = values.map((v) =>
        resolve.expand(v, section, (message) =>
          problems.push({ severity: 'warning', file, section, option: name, message }),
        ),
      );
      const converted = convert(spec, expanded);
      if (!converted.ok) {
        problems.push({
          severity: 'error',
          file,
          section,
          option: name,
          message: `${converted.error}; keeping ${describe(raw[section]![name])}`,
        });
        continue;
      }
      const key = `${section}.${name}`;
      if (spec.kind === 'multi' && multiFromFiles.has(key)) {
        raw[section]![name] = [...(raw[section]![name] as readonly string[]), ...(converted.value as string[])];
      } else {
        raw[section]![name] = converted.value;
      }
      if (spec.kind === 'multi') multiFromFiles.add(key);
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
        problems.push({
          severity: 'error',
          section: 'DEFAULT',
          option: 'collectors',
          message: `unknown collector "${piece}" ignored (known: ${DEFAULT_COLLECTORS.join(', ')})`,
        });
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
  // Loaded here: only the daemon hashes, and the crypto module costs every short-lived command start-up time.
  const { createHash } = await import('node:crypto');
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
