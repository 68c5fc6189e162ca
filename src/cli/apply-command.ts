import path from 'node:path';
import type { Command } from 'commander';
import { MetadataError } from '../apply/apply-errors.js';
import { applyConfigured } from '../apply/configured-apply.js';
import { FALLBACK_METADATA } from '../apply/metadata-sources.js';
import { META_LIST_FILE } from '../cache/metadata-cache.js';
import { loadConfig, type LoadedConfig } from '../config/load.js';
import { logProblems } from '../config/log-problems.js';
import { parseLogLevel } from '../log/logger.js';
import { readJsonFile } from '../util/read-json-file.js';
import { createApplyLogger } from './apply-logger.js';
import { addCommonFlags, chooseLogLevel, configSources, type CommonFlags } from './common-flags.js';
import { addConfigOptions, readConfigOverrides } from './config-options.js';

// `os-config-agent apply`: render the templates from the cached metadata, configured by the agent's config file. Logs
// go to stderr. (The compatibility command `os-apply-config` is os-apply-config-command.ts.)

interface ApplyFlags extends CommonFlags {
  metadata?: string[];
  validate?: boolean;
}

export function defineApplyCommand(cmd: Command, setExit: (code: number) => void): Command {
  addCommonFlags(cmd);
  const bindings = addConfigOptions(cmd);
  cmd.option(
    '--metadata <file>',
    'metadata file to merge instead of the cached list (repeat for more; later wins)',
    (v: string, prev: string[] | undefined) => [...(prev ?? []), v],
  );
  cmd.option('--validate', 'render and check every template but write nothing');
  cmd.action(async () => {
    const flags = cmd.opts<ApplyFlags>();
    if (flags.logLevel) parseLogLevel(flags.logLevel);
    const loaded = await loadConfig(configSources(flags, readConfigOverrides(cmd, bindings)));
    const log = createApplyLogger(loaded, chooseLogLevel(flags, loaded.config.agent.log_level));
    logProblems(loaded, log);
    const { paths } = loaded;
    const listed = flags.metadata
      ? flags.metadata.map((f) => paths.map(path.resolve(f)))
      : await cachedMetadataFiles(loaded);
    await applyConfigured(loaded, {
      metadataFiles: [...FALLBACK_METADATA.map((f) => paths.map(f)), ...listed],
      env: process.env,
      log: log.child({ component: 'apply' }),
      validate: flags.validate === true,
    });
    setExit(0);
  });
  return cmd;
}

/** The metadata files of the last collection, in merge order (os_config_files.json in the cache directory). */
async function cachedMetadataFiles(loaded: LoadedConfig): Promise<string[]> {
  const { config, paths } = loaded;
  const listFile = path.join(config.DEFAULT.cachedir, META_LIST_FILE);
  const read = await readJsonFile(listFile, config.agent.max_source_bytes);
  if (!read.ok) {
    if (read.reason === 'missing') return [];
    throw new MetadataError(`cannot read ${paths.unmap(listFile)} (${read.detail}); run the agent again to rewrite it`);
  }
  if (!Array.isArray(read.value) || !read.value.every((f) => typeof f === 'string')) {
    throw new MetadataError(`${paths.unmap(listFile)} is not a list of file names; run the agent again to rewrite it`);
  }
  return (read.value as string[]).map((f) => paths.map(f));
}
