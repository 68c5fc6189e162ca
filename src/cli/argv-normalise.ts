import { SECTION_NAMES, flagName, sectionSpecs } from '../config/options.js';

// oslo.config spells group flags with the option name as registered, so upstream accepts mixed spellings such as
// --cfn-ca_certificate and --heat_local-path, and negates booleans as --noforce (DEFAULT) or --zaqar-nouse_websockets
// (groups). Existing unit files and scripts use those spellings; they are rewritten here to the one dashed form
// commander knows. Option values (the argument after a flag that takes one) and everything after `--` are left alone.

const BOOL_FLAGS = new Set<string>();
/** oslo's group inverse spelling, dashed (zaqar-nouse-websockets) -> our flag (zaqar-use-websockets). */
const GROUP_INVERSES = new Map<string, string>();
// The agent's own value-taking flags (src/cli/collect-command.ts addCommonFlags), plus every non-boolean option.
const VALUE_FLAGS = new Set<string>([
  'root',
  'config-file',
  'config-dir',
  'log-level',
  'log-file',
  'log-dir',
  'log-config-append',
  'log-date-format',
  'syslog-log-facility',
]);
const VALUE_SHORT_FLAGS = new Set<string>();
for (const section of SECTION_NAMES) {
  for (const [name, spec] of Object.entries(sectionSpecs(section))) {
    const flag = flagName(section, name, spec);
    if (spec.kind === 'bool') {
      BOOL_FLAGS.add(flag);
      if (section !== 'DEFAULT') GROUP_INVERSES.set(`${section}-no${spec.flag ?? name}`.replace(/_/g, '-'), flag);
      continue;
    }
    if (spec.fileOnly) continue;
    VALUE_FLAGS.add(flag);
    if (spec.short) VALUE_SHORT_FLAGS.add(`-${spec.short}`);
  }
}

export function normaliseArgv(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--') {
      out.push(...argv.slice(i));
      break;
    }
    if (VALUE_SHORT_FLAGS.has(arg)) {
      out.push(...argv.slice(i, i + 2));
      i++;
      continue;
    }
    if (!arg.startsWith('--')) {
      out.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = (eq === -1 ? arg.slice(2) : arg.slice(2, eq)).replace(/_/g, '-');
    const rest = eq === -1 ? '' : arg.slice(eq);
    const inverse = GROUP_INVERSES.get(name);
    if (name.startsWith('no') && !name.startsWith('no-') && BOOL_FLAGS.has(name.slice(2)))
      out.push(`--no-${name.slice(2)}${rest}`);
    else if (inverse !== undefined) out.push(`--no-${inverse}${rest}`);
    else out.push(`--${name}${rest}`);
    if (eq === -1 && VALUE_FLAGS.has(name) && i + 1 < argv.length) {
      out.push(argv[i + 1] as string);
      i++;
    }
  }
  return out;
}

/** The index of the first operand of `argv` (the subcommand's name, after any global flags and their values); -1 if none. */
export function firstOperandIndex(argv: readonly string[]): number {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--') return i + 1 < argv.length ? i + 1 : -1;
    if (!arg.startsWith('-') || arg === '-') return i;
    if (VALUE_SHORT_FLAGS.has(arg)) i++;
    else if (arg.startsWith('--') && !arg.includes('=') && VALUE_FLAGS.has(arg.slice(2).replace(/_/g, '-'))) i++;
  }
  return -1;
}
