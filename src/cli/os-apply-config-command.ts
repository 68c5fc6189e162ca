import path from 'node:path';
import { Option, type Command } from 'commander';
import { MetadataError } from '../apply/apply-errors.js';
import { applyTemplates } from '../apply/apply-templates.js';
import { booleanKeyStatus, checkValueType, extractKey, formatKeyValue, subhash } from '../apply/key-lookup.js';
import {
  DEFAULT_OS_CONFIG_FILES,
  FALLBACK_METADATA,
  loadMetadata,
  selectMetadataFiles,
} from '../apply/metadata-sources.js';
import { chooseTemplatesDir, DEFAULT_TEMPLATES_DIR } from '../apply/templates-dir.js';
import { loadConfig } from '../config/load.js';
import { createApplyLogger } from './apply-logger.js';
import { printData } from './quiet-epipe.js';

// The compatibility command `os-apply-config`: upstream's flags, output and exit codes (0 success, 1 failure or
// boolean false, 2 usage error, 255 non-boolean --boolean-key). Logs go to stderr; --key output to stdout.

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

export function defineOsApplyConfigCommand(program: Command, setExit: (code: number) => void): Command {
  program.description('Render os-apply-config templates from merged metadata (os-apply-config compatible).');
  program
    .option(
      '-t, --templates <dir>',
      `template root (default: $OS_CONFIG_APPLIER_TEMPLATES or ${DEFAULT_TEMPLATES_DIR})`,
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
      `JSON list of metadata files (default: $OS_CONFIG_FILES_PATH or ${DEFAULT_OS_CONFIG_FILES})`,
    )
    .addOption(
      new Option('--root <dir>', 'prefix every default absolute path with DIR (tests, image builds)').hideHelp(),
    );
  // Prefix matching as argparse does it, applied just before commander reads the options.
  const parseOptions = program.parseOptions.bind(program);
  program.parseOptions = (argv: string[]) => parseOptions(expandAbbreviations(argv));
  program.action(async () => setExit(await runOsApplyConfig(program.opts<OacFlags>())));
  return program;
}

const identityPaths = { root: '/', map: (p: string) => p, unmap: (p: string) => p };

/** One run: the exit status, as upstream's. */
async function runOsApplyConfig(flags: OacFlags): Promise<number> {
  const loaded = await loadConfig({ root: flags.root }).catch(() => undefined);
  const paths = loaded?.paths ?? identityPaths;
  const log = createApplyLogger(loaded, 'info');
  const templates =
    flags.templates ?? (await chooseTemplatesDir(loaded?.config.apply.templates, paths, process.env, log));
  if (flags.printTemplates) {
    printData(`${templates}\n`);
    return 0;
  }
  // An empty -m (or none) means "not given", as upstream.
  const selected = await selectMetadataFiles({
    metadata: listOf(flags.metadata),
    env: process.env,
    osConfigFiles: flags.osConfigFiles,
    paths,
    log,
  });
  const fallback = listOf(flags.fallbackMetadata) ?? [...FALLBACK_METADATA];
  const files = [...fallback, ...selected].map((f) => (f === '' ? f : paths.map(f)));
  if (flags.key && flags.booleanKey) log.warn('--key is not compatible with --boolean-key; --boolean-key ignored');
  if (flags.key) return printKey(await loadMetadata(files), flags.key, flags, selected);
  if (flags.booleanKey) return booleanKeyStatus(await loadMetadata(files), flags.booleanKey);
  await applyTemplates({
    templatesDir: templates,
    outputDir: paths.map(path.resolve(flags.output)),
    metadata: subhash(await loadMetadata(files), flags.subhash),
    strict: loaded?.config.apply.strict === true,
    log,
    validate: flags.validate === true,
  });
  log.info('success');
  return 0;
}

/** --key: the value printed (type-checked), or --key-default when it is missing. */
function printKey(metadata: Record<string, unknown>, key: string, flags: OacFlags, selected: string[]): number {
  const value = extractKey(metadata, key);
  if (value === undefined) {
    if (flags.keyDefault === undefined)
      throw new MetadataError(`key ${key} does not exist in ${JSON.stringify(selected)}`);
    printData(`${flags.keyDefault}\n`);
    return 0;
  }
  checkValueType(value, flags.type);
  printData(`${formatKeyValue(value)}\n`);
  return 0;
}
