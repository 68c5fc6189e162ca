import { interpolate, type IniDocument } from './oslo-ini.js';
import { isSection, specOf, type SectionName } from './options.js';

// oslo.config's `$name` references: a value may name another option, and gets that option's final value: the command
// line, else the last file that sets it, else its default, itself interpolated. A plain name means the option of the
// same section, else the [DEFAULT] option of that name; `group.name` names another section. Unset options and cycles
// are reported and left as written.

export interface Resolver {
  /** Interpolate `$name` references in a value read for `section`; report each unresolvable name. */
  expand(value: string, section: SectionName, report: (message: string) => void): string;
}

/** The strings an option was given on the command line; undefined when its flag was not given. */
export type CliLookup = (section: SectionName, name: string) => readonly string[] | undefined;

const MAX_INTERPOLATION_DEPTH = 10;

export function createResolver(docs: ReadonlyArray<{ doc: IniDocument }>, fromCli: CliLookup): Resolver {
  const rawValue = (section: SectionName, name: string): string | undefined => {
    const cli = fromCli(section, name);
    if (cli !== undefined) return cli.at(-1);
    for (let i = docs.length - 1; i >= 0; i--) {
      const values = docs[i]?.doc.get(section)?.get(name);
      if (values && values.length > 0) return values[values.length - 1];
    }
    const def = specOf(section, name)?.default;
    if (def === undefined) return undefined;
    return Array.isArray(def) ? (def as readonly unknown[]).map(String).at(-1) : String(def);
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

/** The option a reference names, seen from `section`; undefined when it names none. */
function target(section: SectionName, ref: string): [SectionName, string] | undefined {
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
}
