import type { LoadedConfig } from '../config/load.js';
import type { Logger } from '../log/logger.js';
import { applyTemplates, type ApplyResult } from './apply-templates.js';
import { loadMetadata } from './metadata-sources.js';
import { chooseTemplatesDir } from './templates-dir.js';

// The apply step as the agent's configuration sets it up ([apply] templates, output and strict): the `run` pipeline's
// 20-os-apply-config step and `os-config-agent apply` both render this way. (The os-apply-config command takes
// upstream's flags instead.)

export interface ConfiguredApply {
  /** Metadata files in merge order, mapped under the root; later files win. */
  readonly metadataFiles: readonly string[];
  /** The environment that may name the template root ($OS_CONFIG_APPLIER_TEMPLATES). */
  readonly env: NodeJS.ProcessEnv;
  readonly log: Logger;
  /** Render and check everything but write nothing. */
  readonly validate?: boolean;
}

export async function applyConfigured(loaded: LoadedConfig, apply: ConfiguredApply): Promise<ApplyResult> {
  const { config, paths } = loaded;
  return applyTemplates({
    templatesDir: await chooseTemplatesDir(config.apply.templates, paths, apply.env, apply.log),
    outputDir: config.apply.output,
    metadata: await loadMetadata(apply.metadataFiles),
    strict: config.apply.strict,
    log: apply.log,
    validate: apply.validate === true,
  });
}
