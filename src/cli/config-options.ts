import { Command, Option } from 'commander';
import type { CliOverrides, CliValue } from '../config/load.js';
import { SECTION_NAMES, flagName, sectionSpecs, type SectionName } from '../config/options.js';

// Registers one command-line flag per configuration option (upstream names: --polling-interval, --cfn-metadata-url,
// --heat-local-path, ...) and reads back only the flags the user actually gave, so config-file values are not
// overridden by defaults.

interface Binding {
  section: SectionName;
  name: string;
}

export function addConfigOptions(cmd: Command, sections: readonly SectionName[] = SECTION_NAMES): Map<string, Binding> {
  const bindings = new Map<string, Binding>();
  for (const section of sections) {
    for (const [name, spec] of Object.entries(sectionSpecs(section))) {
      if (spec.fileOnly) continue;
      const flag = flagName(section, name, spec);
      const short = spec.short ? `-${spec.short}, ` : '';
      const where = section === 'DEFAULT' ? '' : `[${section}] `;
      const help = `${where}${spec.help}${spec.default !== undefined && spec.kind !== 'bool' ? ` (default: ${JSON.stringify(spec.default)})` : ''}`;
      let option: Option;
      if (spec.kind === 'bool') {
        option = new Option(`${short}--${flag}`, help);
        cmd.addOption(option);
        cmd.addOption(new Option(`--no-${flag}`, `disable --${flag}`).hideHelp());
      } else if (spec.kind === 'multi') {
        option = new Option(`${short}--${flag} <value>`, `${help} (repeat for more)`).argParser(
          (value: string, previous: unknown) => [...(Array.isArray(previous) ? (previous as string[]) : []), value],
        );
        cmd.addOption(option);
      } else {
        option = new Option(`${short}--${flag} <value>`, help);
        cmd.addOption(option);
      }
      bindings.set(option.attributeName(), { section, name });
    }
  }
  return bindings;
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
