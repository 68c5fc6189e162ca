import { setSecrets, urlSecrets } from '../log/redact.js';
import { SECTION_NAMES, sectionSpecs, type AgentConfig } from './options.js';

// The configuration's part of the one secret rule (docs/security.md): what it holds that no output may show.

/**
 * The values of options the schema does not know but whose names are a secret's (`[heat] passwd`, a misspelt
 * password): ignored as every unknown option is, and scrubbed all the same. Kept per configuration, so that a reload
 * that fails re-registers the secrets of the configuration still in force.
 */
const unknownSecretsOf = new WeakMap<AgentConfig, readonly string[]>();

/**
 * Scrub the secrets of this configuration from every output (replacing those of the configuration registered before:
 * the one loaded last, or the one a failed reload keeps in force): the values of secret options (passwords, the CFN
 * secret key), what any URL among the values carries (a password in its user-info, a TempURL signature, a token), and
 * the values of unknown options with secret names (`unknownSecrets`, given when the configuration is loaded).
 */
export function registerConfigSecrets(config: AgentConfig, unknownSecrets?: readonly string[]): void {
  if (unknownSecrets) unknownSecretsOf.set(config, unknownSecrets);
  const values: string[] = [...(unknownSecretsOf.get(config) ?? [])];
  for (const section of SECTION_NAMES) {
    const options = config[section] as unknown as Record<string, unknown>;
    for (const [name, spec] of Object.entries(sectionSpecs(section))) {
      const value = options[name];
      if (spec.secret && typeof value === 'string') values.push(value);
      for (const text of typeof value === 'string' ? [value] : Array.isArray(value) ? value : [])
        if (typeof text === 'string' && text.includes('://')) values.push(...urlSecrets(text));
    }
  }
  setSecrets('config', values);
}
