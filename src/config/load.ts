import { promises as fs, readFileSync } from 'node:fs';
import { isSecretName } from '../log/secret-names.js';
import { createPathMapper, type PathMapper } from '../util/rooted-path.js';
import { registerConfigSecrets } from './config-secrets.js';
import { findConfigFiles } from './config-files.js';
import { normaliseGroupIntervals } from './group-intervals.js';
import { createResolver, type Resolver } from './interpolation.js';
import { convert, describe, type Converted } from './option-values.js';
import type { OptionSpec } from './option-spec.js';
import { parseOsloIni, type IniDocument } from './oslo-ini.js';
import {
  DEFAULT_COLLECTORS,
  isSection,
  SECTION_NAMES,
  sectionSpecs,
  specOf,
  type AgentConfig,
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

type RawConfig = Record<string, Record<string, unknown>>;

export async function loadConfig(sources: ConfigSources = {}): Promise<LoadedConfig> {
  const paths = createPathMapper(sources.root);
  const problems: ConfigProblem[] = [];
  const files = findConfigFiles(sources.configFiles, sources.configDirs, paths);
  for (const { file, message } of files.missing) problems.push({ severity: 'error', file, message, unreadable: true });
  const raw: RawConfig = {};
  for (const section of SECTION_NAMES) {
    raw[section] = {};
    for (const [name, spec] of Object.entries(sectionSpecs(section))) raw[section][name] = spec.default;
  }
  const docs = readDocuments(files.all, problems);
  const cli = validCli(sources.cli);
  const resolve = createResolver(docs, (section, name) => cliStrings(cli[section]?.[name]));
  // oslo.config concatenates a multi-valued option across files (the first file's values replace the default).
  const multiFromFiles = new Set<string>();
  const unknownSecrets: string[] = [];
  for (const { file, doc } of docs)
    applyDocument(file, doc, raw, problems, resolve, { multiFromFiles, unknownSecrets });
  applyCli(cli, raw, problems, resolve);
  raw.DEFAULT!.collectors = normaliseCollectors(raw.DEFAULT!.collectors as readonly string[], problems);
  raw.deploy!.reconverge_interval = normaliseGroupIntervals(raw.deploy!.reconverge_interval as string[], problems);
  // Upstream: --force implies --one-time.
  if (raw.DEFAULT!.force === true) raw.DEFAULT!.one_time = true;
  mapPaths(raw, paths);
  const config = deepFreeze(raw) as unknown as AgentConfig;
  registerConfigSecrets(config, unknownSecrets);
  return {
    config,
    paths,
    files: Object.freeze([...files.all]),
    hashedFiles: Object.freeze([...files.hashed]),
    problems: Object.freeze(problems),
  };
}

/** The files parsed, in order; one that cannot be read is a problem (a reload then keeps what is in force). */
function readDocuments(files: readonly string[], problems: ConfigProblem[]): Array<{ file: string; doc: IniDocument }> {
  const docs: Array<{ file: string; doc: IniDocument }> = [];
  for (const file of files) {
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
  return docs;
}

function validCli(cli: CliOverrides | undefined): CliOverrides {
  const out: CliOverrides = {};
  for (const [section, values] of Object.entries(cli ?? {})) if (isSection(section) && values) out[section] = values;
  return out;
}

function cliStrings(value: CliValue | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  return Array.isArray(value) ? (value as readonly unknown[]).map(String) : [String(value)];
}

/** The command-line layer: replaces file values (multi-valued options too); values are interpolated as oslo does. */
function applyCli(cli: CliOverrides, raw: RawConfig, problems: ConfigProblem[], resolve: Resolver): void {
  for (const [section, values] of Object.entries(cli) as Array<[SectionName, Record<string, CliValue>]>) {
    for (const [name, value] of Object.entries(values)) {
      const spec = specOf(section, name);
      const strings = cliStrings(value);
      if (!spec || strings === undefined) continue;
      const expanded = strings.map((v) =>
        resolve.expand(v, section, (message) =>
          problems.push({ severity: 'warning', section, option: name, message: `command line: ${message}` }),
        ),
      );
      const converted = convert(spec, expanded);
      const problem = conversionProblem(converted, spec, raw[section]![name]);
      if (problem) problems.push({ severity: 'error', section, option: name, message: `command line: ${problem}` });
      raw[section]![name] = valueInForce(converted, spec, raw[section]![name]);
    }
  }
}

/** The problem a conversion reports, if any: what was refused, and what is in force instead. */
function conversionProblem(converted: Converted, spec: OptionSpec<unknown>, before: unknown): string | undefined {
  if (converted.ok) return converted.dropped !== undefined ? `${converted.dropped}; those are left out` : undefined;
  if (spec.onInvalid) return `${converted.error}; ${spec.onInvalid.meaning}`;
  return `${converted.error}; keeping ${describe(before, spec)}`;
}

/** The option's value after a conversion: the new one, else what the option says an invalid one means, else `before`. */
function valueInForce(converted: Converted, spec: OptionSpec<unknown>, before: unknown): unknown {
  if (converted.ok) return converted.value;
  return spec.onInvalid ? spec.onInvalid.value : before;
}

/** Every path option mapped under the root. */
function mapPaths(raw: RawConfig, paths: PathMapper): void {
  for (const section of SECTION_NAMES) {
    for (const [name, spec] of Object.entries(sectionSpecs(section))) {
      const value = raw[section]![name];
      if (!spec.path) continue;
      if (typeof value === 'string' && value !== '') raw[section]![name] = paths.map(value);
      else if (Array.isArray(value)) raw[section]![name] = value.map((v: string) => paths.map(v));
    }
  }
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

function applyDocument(
  file: string,
  doc: IniDocument,
  raw: Record<string, Record<string, unknown>>,
  problems: ConfigProblem[],
  resolve: Resolver,
  seen: { readonly multiFromFiles: Set<string>; readonly unknownSecrets: string[] },
): void {
  const { multiFromFiles } = seen;
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
        if (isSecretName(name)) seen.unknownSecrets.push(...values);
        continue;
      }
      const expanded = values.map((v) =>
        resolve.expand(v, section, (message) =>
          problems.push({ severity: 'warning', file, section, option: name, message }),
        ),
      );
      const converted = convert(spec, expanded);
      const problem = conversionProblem(converted, spec, raw[section]![name]);
      if (problem) problems.push({ severity: 'error', file, section, option: name, message: problem });
      if (!converted.ok) {
        raw[section]![name] = valueInForce(converted, spec, raw[section]![name]);
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
