import { readFile } from 'node:fs/promises';
import type { LoadedConfig } from '../config/load.js';
import { SECTION_NAMES, sectionSpecs } from '../config/options.js';
import { scrubText } from '../log/redact.js';
import type { BundleEntry } from './bundle-entry.js';
import { REDACTED, isSecretKey } from './redact-json.js';

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

/** `password = x` and the other secret options' lines with their values replaced (indented continuations too). */
export function maskSecretLines(text: string): string {
  let masking = false;
  return text
    .split('\n')
    .map((line) => {
      if (masking && /^[ \t]+\S/.test(line)) return line.replace(/\S.*$/, REDACTED);
      masking = false;
      const option = /^(\s*)([A-Za-z0-9_.-]+)(\s*[=:]\s*)(.*)$/.exec(line);
      if (!option || !isSecretKey(option[2]!)) return line;
      masking = true;
      return option[4] === '' ? line : `${option[1]}${option[2]}${option[3]}${REDACTED}`;
    })
    .join('\n');
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
