import path from 'node:path';
import { Command, Option } from 'commander';
import pino from 'pino';
import { MetadataError } from '../apply/apply-errors.js';
import { applyTemplates } from '../apply/apply-templates.js';
import { booleanKeyStatus, checkValueType, extractKey, formatKeyValue, subhash } from '../apply/key-lookup.js';
import { FALLBACK_METADATA, loadMetadata, selectMetadataFiles } from '../apply/metadata-sources.js';
import { resolveTemplatesDir } from '../apply/templates-dir.js';
import { loadConfig, type LoadedConfig } from '../config/load.js';
import { logProblems } from '../config/log-problems.js';
import { createLogger, fdDestination, setLogFormat, type Logger, type LogLevel } from '../log/logger.js';
import { readJsonFile } from '../util/read-json-file.js';
import type { CommandContext } from './command-context.js';
import {
  addCommonFlags,
  chooseLogLevel,
  commonFlagsOf,
  configuredLogFormat,
  configSources,
  COMMON_HEADING,
  type CommonFlags,
} from './common-flags.js';
import { addConfigOptions, readConfigOverrides } from './config-options.js';
import { printData } from './quiet-epipe.js';

// `os-config-agent apply` (render the templates from the cached metadata, configured by the agent's config file) and
// the compatibility command `os-apply-config` (upstream's flags, output and exit codes: 0 success, 1 failure or
// boolean false, 2 usage error, 255 non-boolean --boolean-key). Logs go to stderr; --key output to stdout.

const LEGACY_LOG_FILE = '/var/log/os-apply-config.log';
const META_LIST_FILE = 'os_config_files.json';

/** stderr logger, plus upstream's root-only /var/log/os-apply-config.log when [apply] legacy_log_file is set. */
export function createApplyLogger(loaded: LoadedConfig | undefined, level: LogLevel): Logger {
  const legacy = loaded?.config.apply.legacy_log_file === true && process.geteuid?.() === 0;
  const format = loaded ? configuredLogFormat(loaded.config.agent) : undefined;
  if (!legacy || !loaded) {
    const log = createLogger({ level, destination: 'stderr', buffered: true });
    setLogFormat(log, format);
    return log;
  }
  const stderr = fdDestination(2);
  stderr.setFormat(format);
  const file = pino.destination({ dest: loaded.paths.map(LEGACY_LOG_FILE), append: true, sync: true, mkdir: true });
  const stream = pino.multistream([
    { level: 'trace', stream: stderr },
    { level: 'trace', stream: file },
  ]);
  return createLogger({ level, destination: stream });
}

interface ApplyFlags extends CommonFlags {
  metadata?: string[];
  validate?: boolean;
}

export function defineApplyCommand(cmd: Command, ctx: CommandContext): Command {
  cmd.option(
    '--metadata <file>',
    'metadata file to merge instead of the cached list (repeat for more; later wins)',
    (v: string, prev: string[] | undefined) => [...(prev ?? []), v],
  );
  cmd.option('--validate', 'render and check every template but write nothing');
  addCommonFlags(cmd, COMMON_HEADING);
  // What rendering reads: the list of cached metadata files, the size limit of a metadata file, the apply section.
  const bindings = addConfigOptions(cmd, {
    scope: { DEFAULT: ['cachedir'], agent: ['log_level', 'log_format', 'max_source_bytes'], apply: 'all' },
    helpAll: ctx.helpAll,
  });
  cmd.action(async () => {
    const flags = commonFlagsOf<ApplyFlags>(cmd);
    const loaded = await loadConfig(configSources(flags, readConfigOverrides(cmd, bindings)));
    const log = createApplyLogger(loaded, chooseLogLevel(flags, loaded.config.agent.log_level));
    logProblems(loaded, log);
    const { config, paths } = loaded;
    const templates = await resolveTemplatesDir(config.apply.templates, paths, process.env);
    if (templates.deprecated) log.warn({ dir: templates.dir }, 'template directory location is deprecated');
    const listed = flags.metadata
      ? flags.metadata.map((f) => paths.map(path.resolve(f)))
      : await cachedMetadataFiles(loaded);
    const files = [...FALLBACK_METADATA.map((f) => paths.map(f)), ...listed];
    const metadata = await loadMetadata(files);
    await applyTemplates({
      templatesDir: templates.dir,
      outputDir: config.apply.output,
      metadata,
      strict: config.apply.strict,
      log: log.child({ component: 'apply' }),
      validate: flags.validate === true,
    });
    ctx.setExit(0);
  });
  return cmd;
}

/** The metadata files of the last collection, in merge order (os_config_files.json in the cache directory). */
async function cachedMetadataFiles(loaded: LoadedConfig): Promise<string[]> {
  const { config, paths } = loaded;
  const listFile = path.join(config.DEFAULT.cachedir, META_LIST_FILE);
  const read = await readJsonFile(listFile, config.agent.max_source_bytes);
  if (!read.ok) {
    if (read.reason === 'missing') return [];
    throw new MetadataError(`cannot read ${paths.unmap(listFile)} (${read.detail}); run the agent again to rewrite it`);
  }
  if (!Array.isArray(read.value) || !read.value.every((f) => typeof f === 'string')) {
    throw new MetadataError(`${paths.unmap(listFile)} is not a list of file names; run the agent again to rewrite it`);
  }
  return (read.value as string[]).map((f) => paths.map(f));
}

interface OacFlags {
  templates?: string;
  output: string;
  // Variadic options with optional values: `true` when given with no value.
  metadata?: string[] | true;
  fallbackMetadata?: string[] | true;
  validate?: boolean;
  printTemplates?: boolean;
  subhash?: string;
  key?: string;
  type: string;
  keyDefault?: string;
  booleanKey?: string;
  osConfigFiles?: string;
  root?: string;
}

const LONG_OPTIONS = [
  '--templates',
  '--output',
  '--metadata',
  '--fallback-metadata',
  '--validate',
  '--print-templates',
  '--subhash',
  '--key',
  '--type',
  '--key-default',
  '--boolean-key',
  '--version',
  '--os-config-files',
  '--root',
  '--help',
];

/** argparse accepts any unambiguous prefix of a long option (--temp, --print-t); so does this command. */
export function expandAbbreviations(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--') {
      out.push(...argv.slice(i));
      break;
    }
    if (!arg.startsWith('--') || arg.length < 3) {
      out.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = eq === -1 ? arg : arg.slice(0, eq);
    const rest = eq === -1 ? '' : arg.slice(eq);
    if (LONG_OPTIONS.includes(name)) {
      out.push(arg);
      continue;
    }
    const matches = LONG_OPTIONS.filter((o) => o.startsWith(name));
    out.push(matches.length === 1 ? `${matches[0] as string}${rest}` : arg);
  }
  return out;
}

const variadic = (value: string, previous: string[] | true | undefined): string[] => [
  ...(Array.isArray(previous) ? previous : []),
  value,
];
const listOf = (value: string[] | true | undefined): string[] | undefined =>
  value === undefined ? undefined : value === true ? [] : value;

export function defineOsApplyConfigCommand(program: Command, ctx: CommandContext): Command {
  const setExit = ctx.setExit;
  program.description('Render os-apply-config templates from merged metadata (os-apply-config compatible).');
  program
    .option(
      '-t, --templates <dir>',
      'template root (default: $OS_CONFIG_APPLIER_TEMPLATES or /usr/libexec/os-apply-config/templates)',
    )
    .option('-o, --output <dir>', 'root directory for output', '/')
    .addOption(
      new Option(
        '-m, --metadata [files...]',
        'metadata files (override $OS_CONFIG_FILES); repeat or list several, later wins',
      ).argParser(variadic),
    )
    .addOption(
      new Option(
        '--fallback-metadata [files...]',
        `files read first, lowest priority (default: ${FALLBACK_METADATA.join(' ')})`,
      ).argParser(variadic),
    )
    .option('-v, --validate', 'render everything but write nothing')
    .option('--print-templates', 'print the template root and exit')
    .option('-s, --subhash <key>', 'render with the object at this dotted key as the root')
    .option('--key <key>', 'print the value at this dotted key and exit (see --type, --key-default)')
    .option(
      '--type <type>',
      'validate --key: int, default, netaddress, netdevice, username, dsn, swiftdevices or raw',
      'default',
    )
    .option('--key-default <value>', 'print this when --key is missing (not type-checked)')
    .option('--boolean-key <key>', 'exit 0 if the key is true, 1 if false, 255 otherwise')
    .option(
      '--os-config-files <file>',
      'JSON list of metadata files (default: $OS_CONFIG_FILES_PATH or /var/lib/os-collect-config/os_config_files.json)',
    )
    .addOption(
      new Option('--root <dir>', 'prefix every default absolute path with DIR (tests, image builds)').hideHelp(),
    );
  // Prefix matching as argparse does it, applied just before commander reads the options.
  const parseOptions = program.parseOptions.bind(program);
  program.parseOptions = (argv: string[]) => parseOptions(expandAbbreviations(argv));
  program.action(async () => {
    const flags = program.opts<OacFlags>();
    const loaded = await loadConfig({ root: flags.root }).catch(() => undefined);
    const paths = loaded?.paths;
    const map = (p: string) => (paths ? paths.map(p) : p);
    const log = createApplyLogger(loaded, 'info');
    const templates = flags.templates ?? (await defaultTemplates(loaded, log));
    if (flags.printTemplates) {
      printData(`${templates}\n`);
      setExit(0);
      return;
    }
    // An empty -m (or none) means "not given", as upstream.
    const selected = await selectMetadataFiles({
      metadata: listOf(flags.metadata),
      env: process.env,
      osConfigFiles: flags.osConfigFiles,
      paths: loaded?.paths ?? identityPaths,
      log,
    });
    const fallback = listOf(flags.fallbackMetadata) ?? [...FALLBACK_METADATA];
    const files = [...fallback, ...selected].map((f) => (f === '' ? f : map(f)));
    if (flags.key && flags.booleanKey) log.warn('--key is not compatible with --boolean-key; --boolean-key ignored');
    if (flags.key) {
      const metadata = await loadMetadata(files);
      const value = extractKey(metadata, flags.key);
      if (value === undefined) {
        if (flags.keyDefault !== undefined) {
          printData(`${flags.keyDefault}\n`);
          setExit(0);
          return;
        }
        throw new MetadataError(`key ${flags.key} does not exist in ${JSON.stringify(selected)}`);
      }
      checkValueType(value, flags.type);
      printData(`${formatKeyValue(value)}\n`);
      setExit(0);
      return;
    }
    if (flags.booleanKey) {
      setExit(booleanKeyStatus(await loadMetadata(files), flags.booleanKey));
      return;
    }
    const metadata = subhash(await loadMetadata(files), flags.subhash);
    await applyTemplates({
      templatesDir: templates,
      outputDir: map(path.resolve(flags.output)),
      metadata,
      strict: loaded?.config.apply.strict === true,
      log,
      validate: flags.validate === true,
    });
    log.info('success');
    setExit(0);
  });
  return program;
}

const identityPaths = { root: '/', map: (p: string) => p, unmap: (p: string) => p };

async function defaultTemplates(loaded: LoadedConfig | undefined, log: Logger): Promise<string> {
  const choice = await resolveTemplatesDir(loaded?.config.apply.templates, loaded?.paths ?? identityPaths, process.env);
  if (choice.deprecated) log.warn({ dir: choice.dir }, 'template directory location is deprecated');
  return choice.dir;
}
