// Prints the option table of docs/configuration.md from the schema (src/config/options.ts), so the docs cannot drift:
// test/docs/configuration.test.ts checks that the page contains exactly this table (UPDATE_DOCS=1 rewrites it).
import { SECTION_NAMES, sectionSpecs } from '../src/config/options.js';

export function configTable(): string {
  const rows = ['| Section | Option | Default | Meaning |', '|---|---|---|---|'];
  for (const section of SECTION_NAMES) {
    for (const [name, spec] of Object.entries(sectionSpecs(section))) {
      const def =
        spec.default === undefined
          ? '(unset)'
          : Array.isArray(spec.default)
            ? (spec.default as string[]).join(' ') || '(empty)'
            : String(spec.default);
      const meaning = `${spec.help}${spec.secret ? ' Secret: never logged.' : ''}`.replace(/\|/g, '\\|');
      rows.push(`| ${section} | ${name} | \`${def}\` | ${meaning} |`);
    }
  }
  return rows.join('\n');
}
