import { InvalidArgumentError, Option, type Command } from 'commander';
import type { CliOverrides, CliValue } from '../config/load.js';
import { convert } from '../config/option-values.js';
import type { OptionSpec } from '../config/option-spec.js';
import { SECTION_NAMES, flagName, sectionSpecs, type SectionName } from '../config/options.js';

// One command-line flag per configuration option a command reads (upstream names: --polling-interval,
// --cfn-metadata-url, --heat-local-path, ...), read back only when the user gave them, so config-file values are not
// overridden by defaults. A command is offered the options it reads (its scope), nothing else: `status --force` is a
// usage error, not a flag silently ignored. The overrides are listed by `--help-all`; `--help` counts them, except
// those a command promotes to its own options (`run --one-time`). A value of the wrong kind is a usage error (exit 2).

interface Binding {
  section: SectionName;
  name: string;
}

/** The options a command reads: every option of a section, or some of them. */
export type ConfigScope = Partial<Record<SectionName, 'all' | readonly string[]>>;

/** Every option: the commands that run the whole agent (run, collect, doctor). */
export const ALL_OPTIONS: ConfigScope = Object.fromEntries(SECTION_NAMES.map((s) => [s, 'all']));

export const OVERRIDES_HEADING = 'Configuration overrides (each sets the option of the configuration file it names):';

export interface ConfigFlagsOptions {
  readonly scope: ConfigScope;
  /** Options shown with the command's own flags, as `section.name` (`DEFAULT.one_time`). */
  readonly own?: readonly string[];
  /** List every override in --help (`--help-all`), not only their number. */
  readonly helpAll: boolean;
}

export function addConfigOptions(cmd: Command, options: ConfigFlagsOptions): Map<string, Binding> {
  const bindings = new Map<string, Binding>();
  let hidden = 0;
  for (const section of SECTION_NAMES) {
    const wanted = options.scope[section];
    if (wanted === undefined) continue;
    for (const [name, spec] of Object.entries(sectionSpecs(section))) {
      if (spec.fileOnly || (wanted !== 'all' && !wanted.includes(name))) continue;
      const own = options.own?.includes(`${section}.${name}`) === true;
      const option = optionFor(section, name, spec);
      if (!own) {
        option.helpGroup(OVERRIDES_HEADING);
        if (!options.helpAll) {
          option.hideHelp();
          hidden++;
        }
      }
      cmd.addOption(option);
      if (spec.kind === 'bool')
        cmd.addOption(new Option(`--no-${flagName(section, name, spec)}`, `unset ${option.long}`).hideHelp());
      bindings.set(option.attributeName(), { section, name });
    }
  }
  if (hidden > 0)
    cmd.addHelpText(
      'after',
      [
        '',
        `Configuration overrides: ${hidden} more flags, one per option of the configuration`,
        'file this command reads (--help-all lists them; configuration.md describes them).',
      ].join('\n'),
    );
  return bindings;
}

function optionFor(section: SectionName, name: string, spec: OptionSpec<unknown>): Option {
  const flag = flagName(section, name, spec);
  const short = spec.short ? `-${spec.short}, ` : '';
  const where = section === 'DEFAULT' ? '' : `[${section}] `;
  const shownDefault =
    spec.default !== undefined && spec.kind !== 'bool' ? ` (default: ${JSON.stringify(spec.default)})` : '';
  const help = `${where}${spec.help}${shownDefault}`;
  if (spec.kind === 'bool') return new Option(`${short}--${flag}`, help);
  // <path> for a file or directory (the completion offers file names), <value> for anything else.
  const value = spec.path ? '<path>' : '<value>';
  if (spec.kind === 'multi')
    return new Option(`${short}--${flag} ${value}`, `${help} (repeat for more)`).argParser(
      (given: string, previous: unknown) => [...(Array.isArray(previous) ? (previous as string[]) : []), given],
    );
  return new Option(`${short}--${flag} ${value}`, help).argParser((given: string) => checked(spec, given));
}

/**
 * A number must be one: `--polling-interval abc` is refused before anything runs. A value naming other options
 * (`$name`, oslo's interpolation) is checked once it is expanded, by the configuration loader.
 */
function checked(spec: OptionSpec<unknown>, value: string): string {
  if (value.includes('$')) return value;
  const converted = convert(spec, [value]);
  if (!converted.ok) throw new InvalidArgumentError(converted.error);
  return value;
}

export function readConfigOverrides(cmd: Command, bindings: Map<string, Binding>): CliOverrides {
  const out: CliOverrides = {};
  const opts = cmd.opts<Record<string, unknown>>();
  for (const [attr, binding] of bindings) {
    const value = opts[attr];
    if (value === undefined) continue;
    const section = (out[binding.section] ??= {});
    section[binding.name] = value as CliValue;
  }
  return out;
}
