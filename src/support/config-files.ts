import { readFile } from 'node:fs/promises';
import type { LoadedConfig } from '../config/load.js';
import { isSection, SECTION_NAMES, sectionSpecs, specOf } from '../config/options.js';
import { scrubText } from '../log/redact.js';
import { isSecretName } from '../log/secret-names.js';
import type { BundleEntry } from './bundle-entry.js';
import { REDACTED } from './redact-json.js';

// The configuration for a support bundle: each file the agent reads, as written (comments and all: they say what the
// operator meant), with the value of every secret option replaced; and the configuration in force, as JSON.

export async function configEntries(loaded: LoadedConfig): Promise<BundleEntry[]> {
  const out: BundleEntry[] = [];
  for (const file of loaded.files) {
    const text = await readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => `# not readable: ${err.code}\n`);
    const shown = loaded.paths.unmap(file);
    out.push({ name: `config/files${shown}`, text: scrubText(maskSecretLines(text)) });
  }
  out.push({ name: 'config/effective.json', text: `${JSON.stringify(effective(loaded), null, 2)}\n` });
  return out;
}

/**
 * `password = x` and the other secret options' lines with their values replaced (indented continuations too): the
 * options the schema marks secret, and any option it does not know whose name is a secret's (isSecretName). A known
 * option that is not secret (deployment_key, access_key_id) is shown, scrubbed as every line is.
 */
export function maskSecretLines(text: string): string {
  let masking = false;
  let section = 'DEFAULT';
  return text
    .split('\n')
    .map((line) => {
      if (masking && /^[ \t]+\S/.test(line)) return line.replace(/\S.*$/, REDACTED);
      masking = false;
      const header = /^\s*\[([^\]]+)\]/.exec(line);
      if (header) section = header[1]!;
      const option = /^(\s*)([A-Za-z0-9_.-]+)(\s*[=:]\s*)(.*)$/.exec(line);
      if (!option || !isSecretOption(section, option[2]!)) return line;
      masking = true;
      return option[4] === '' ? line : `${option[1]}${option[2]}${option[3]}${REDACTED}`;
    })
    .join('\n');
}

function isSecretOption(section: string, name: string): boolean {
  const key = section === 'DEFAULT' ? section : section.toLowerCase();
  const spec = isSection(key) ? specOf(key, name) : undefined;
  return spec ? spec.secret === true : isSecretName(name);
}

/** The configuration in force, secret options masked; paths as the instance sees them. */
function effective(loaded: LoadedConfig): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = {};
  for (const section of SECTION_NAMES) {
    const values = loaded.config[section] as unknown as Record<string, unknown>;
    out[section] = {};
    for (const [name, spec] of Object.entries(sectionSpecs(section))) {
      const value = values[name];
      out[section][name] =
        spec.secret && value !== undefined
          ? REDACTED
          : typeof value === 'string'
            ? scrubText(spec.path ? loaded.paths.unmap(value) : value)
            : value;
    }
  }
  return out;
}
