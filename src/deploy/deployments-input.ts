import path from 'node:path';
import type { AgentConfig } from '../config/options.js';
import type { Logger } from '../log/logger.js';
import { readFileIfExists, writeFileAtomic } from '../util/atomic-write.js';
import { deepMerge, isJsonObject, type JsonObject } from '../util/json-merge.js';
import { pythonJsonDumps } from '../util/python-json.js';
import type { PathMapper } from '../util/rooted-path.js';
import { readJsonFile } from '../util/read-json-file.js';
import { DeploymentsInputError, stateError } from '../state/errors.js';

// Where the deployments list comes from. Upstream, os-apply-config deep-merges the OS_CONFIG_FILES in order and
// renders the `deployments` key into /var/run/heat-config/heat-config, which 55-heat-config reads. Here the same
// merge is done on the cycle's metadata (or on the cached files for `deploy`), and the heat-config file is still
// written for upstream tools; `deploy --heat-config FILE` reads such a file directly.

const META_LIST_FILE = 'os_config_files.json';

/**
 * The `deployments` value of the deep merge of `values` (objects merge, anything else replaces, as os-apply-config).
 * Undefined when no value has the key, or when the result is not a list (logged).
 */
export function deploymentsFrom(values: readonly unknown[], log: Logger): unknown[] | undefined {
  let merged: JsonObject = {};
  let found = false;
  for (const value of values) {
    if (!isJsonObject(value) || !Object.hasOwn(value, 'deployments')) continue;
    // Only this key matters, and a deep merge treats each top-level key on its own.
    merged = deepMerge(merged, { deployments: value.deployments });
    found = true;
  }
  if (!found) return undefined;
  const list = merged.deployments;
  if (!Array.isArray(list)) {
    log.warn(
      { type: list === null ? 'null' : typeof list },
      'the merged "deployments" value is not a list; deployments left alone',
    );
    return undefined;
  }
  return list;
}

/** The metadata files of the last collection (os_config_files.json in the cache directory), parsed, in order. */
export async function readCachedMetadata(config: AgentConfig, paths: PathMapper, log: Logger): Promise<unknown[]> {
  const listFile = path.join(config.DEFAULT.cachedir, META_LIST_FILE);
  const read = await readJsonFile(listFile, config.agent.max_source_bytes);
  if (!read.ok) {
    throw new DeploymentsInputError(
      `cannot read ${paths.unmap(listFile)} (${read.detail}); run the agent once (os-config-agent collect or run) so the metadata is cached, or pass --heat-config FILE`,
    );
  }
  if (!Array.isArray(read.value) || !read.value.every((f) => typeof f === 'string')) {
    throw new DeploymentsInputError(
      `${paths.unmap(listFile)} is not a list of file names; run the agent again to rewrite it`,
    );
  }
  const values: unknown[] = [];
  for (const file of read.value as string[]) {
    const data = await readJsonFile(paths.map(file), config.agent.max_source_bytes);
    if (!data.ok) {
      log.warn(
        { file: paths.unmap(paths.map(file)), reason: `${data.reason}: ${data.detail}` },
        'cached metadata file skipped',
      );
      continue;
    }
    values.push(data.value);
  }
  return values;
}

/**
 * A heat-config file (a JSON list of deployments). As 55-heat-config: an empty file means no deployments; unlike it,
 * a file that is not a JSON list is an error instead of a silent success.
 */
export async function readHeatConfigFile(file: string, shown: string, maxBytes: number): Promise<unknown[]> {
  const read = await readJsonFile(file, maxBytes);
  if (!read.ok) {
    if (read.reason === 'invalid-json' && ((await readFileIfExists(file).catch(() => undefined)) ?? 'x').trim() === '')
      return [];
    throw new DeploymentsInputError(`cannot read the heat-config file ${shown}: ${read.detail}`);
  }
  if (!Array.isArray(read.value))
    throw new DeploymentsInputError(`the heat-config file ${shown} does not hold a JSON list of deployments`);
  return read.value;
}

/** Write [deploy] heat_config_file (the deployments list, compact as os-apply-config renders it, 0600). */
export async function writeHeatConfigFile(config: AgentConfig, deployments: readonly unknown[]): Promise<void> {
  const file = config.deploy.heat_config_file;
  if (file === '') return;
  try {
    await writeFileAtomic(file, pythonJsonDumps(deployments), { mode: 0o600, mkdirMode: 0o700 });
  } catch (err) {
    throw stateError('write the heat-config file', file, err);
  }
}
