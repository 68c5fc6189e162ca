import { SECTION_NAMES, flagName, sectionSpecs } from '../config/options.js';

// oslo.config spells group flags with the option name as registered, so upstream accepts mixed spellings such as
// --cfn-ca_certificate and --heat_local-path, and negates booleans as --noforce. Existing unit files and scripts
// use those spellings; they are rewritten here to the one dashed form commander knows.

const BOOL_FLAGS = new Set<string>();
for (const section of SECTION_NAMES) {
  for (const [name, spec] of Object.entries(sectionSpecs(section))) {
    if (spec.kind === 'bool') BOOL_FLAGS.add(flagName(section, name, spec));
  }
}

export function normaliseArgv(argv: readonly string[]): string[] {
  const out: string[] = [];
  let passthrough = false;
  for (const arg of argv) {
    if (passthrough || !arg.startsWith('--') || arg === '--') {
      if (arg === '--') passthrough = true;
      out.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = (eq === -1 ? arg.slice(2) : arg.slice(2, eq)).replace(/_/g, '-');
    const rest = eq === -1 ? '' : arg.slice(eq);
    if (name.startsWith('no') && !name.startsWith('no-') && BOOL_FLAGS.has(name.slice(2))) {
      out.push(`--no-${name.slice(2)}${rest}`);
    } else {
      out.push(`--${name}${rest}`);
    }
  }
  return out;
}
