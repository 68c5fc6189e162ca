import path from 'node:path';
import { isJsonObject } from '../../util/json-merge.js';
import { makeDataDir, pythonJson, replaceDataFiles, type DataFile } from '../kit/data-files.js';
import { HookFailure, type BuiltinHook, type HookContext } from '../contract.js';
import type { HookDeclaration } from '../declaration.js';
import { hookRoot, pathSetting } from '../hook-paths.js';
import { result } from '../hook-result.js';

// Group "hiera": `hierarchy` becomes hiera.yaml (hiera 3 format, JSON backend), `datafiles` become
// <datadir>/<name>.json, for puppet runs (the puppet hook's or any other) to look up. Upstream: heat-agents'
// hook-hiera.py, including its refusal to run while os-apply-config still holds legacy hiera data. The files are placed
// by the rule for files a deployment names (util/write-target.ts): a data directory that is a link out of the root, or
// another user's link, is refused where upstream wrote through it.

const DEFAULT_CHECK = 'os-apply-config --key hiera.datafiles --type raw --key-default empty';
const KNOWN_KEYS: readonly string[] = ['hierarchy', 'datafiles'];
/** Data files are private: hiera data commonly holds passwords. */
const FILE_MODE = 0o600;

/** It writes files; its legacy-data check's command is optional (not installed: no legacy data). */
export const declaration: HookDeclaration = { group: 'hiera' };

export const hook: BuiltinHook = {
  group: declaration.group,
  acceptsNoId: true,

  // hiera.yaml and the data files are read by later puppet runs: they stay when the deployment goes, as upstream.
  workFiles: () => [],

  async run(deployment, ctx) {
    const { env, log } = ctx;
    const datadir = pathSetting(env, 'HEAT_PUPPET_HIERA_DATADIR', '/etc/puppet/hieradata');
    const configFile = pathSetting(env, 'HEAT_HIERA_CONFIG', '/etc/puppet/hiera.yaml');
    const config = checkConfig(deployment.config);

    const legacy = await legacyHieraData(ctx);
    if (legacy !== null) {
      log.error('legacy hiera data found', { command: legacy.command });
      return result({
        stdout: legacy.stdout,
        status: 1,
        stderr:
          `Legacy hieradata from os-apply-config has been detected - ${legacy.stdout.trimEnd()}. Please update all of your ` +
          'interfaces to use the new heat-agents hiera hook before proceeding' +
          (legacy.status === 0
            ? ''
            : ` (the check "${legacy.command}" exited with status ${legacy.status}: ${legacy.stderr.trim()})`),
      });
    }

    // Made first, even with no data files, as upstream: puppet's hiera reads it.
    const root = hookRoot(env);
    await makeDataDir(datadir, root);
    const files: DataFile[] = [];
    if (config.hierarchy) {
      const lines = config.hierarchy.map((item) => `  - ${item}\n`).join('');
      files.push({
        file: configFile,
        mode: FILE_MODE,
        content: `\n---\n:backends:\n  - json\n:json:\n  :datadir: ${datadir}\n:hierarchy:\n${lines}`,
      });
    }
    for (const [name, data] of config.datafiles) {
      files.push({
        file: path.join(datadir, `${name}.json`),
        mode: FILE_MODE,
        content: pythonJson(data, { indent: 4, sortKeys: true }),
      });
    }
    await replaceDataFiles(files, root);
    for (const { file } of files) log.info('file written', { file });
    return result({ status: 0 });
  },
};

interface HieraConfig {
  readonly hierarchy?: string[];
  readonly datafiles: Array<[string, unknown]>;
}

function checkConfig(config: unknown): HieraConfig {
  if (!isJsonObject(config)) {
    throw new HookFailure(
      'the hiera config must be an object with "hierarchy" (a list of hierarchy levels) and "datafiles" (data by file name)',
    );
  }
  const unknown = Object.keys(config).filter((k) => !KNOWN_KEYS.includes(k));
  if (unknown.length > 0) {
    throw new HookFailure(
      `the hiera config has unknown keys ${unknown.map((k) => JSON.stringify(k)).join(', ')}: only "hierarchy" and "datafiles" are read`,
    );
  }
  const { hierarchy, datafiles = {} } = config;
  if (
    hierarchy !== undefined &&
    !(Array.isArray(hierarchy) && hierarchy.every((h) => typeof h === 'string' && h !== '' && !/[\r\n]/.test(h)))
  ) {
    throw new HookFailure(
      'the hiera config\'s "hierarchy" must be a list of hierarchy levels (non-empty strings of one line each)',
    );
  }
  if (!isJsonObject(datafiles))
    throw new HookFailure('the hiera config\'s "datafiles" must be an object of data by file name');
  const entries = Object.entries(datafiles);
  for (const [name] of entries) {
    const parts = name.split('/');
    if (name.includes('\0') || parts.some((p) => p === '' || p === '.' || p === '..')) {
      throw new HookFailure(
        `the hiera data file name ${JSON.stringify(name)} cannot be a file under the data directory: use names as in the hierarchy, such as "common" or "nodes/web1"`,
      );
    }
  }
  return { ...(hierarchy !== undefined ? { hierarchy: hierarchy as string[] } : {}), datafiles: entries };
}

interface LegacyData {
  readonly command: string;
  readonly stdout: string;
  readonly stderr: string;
  readonly status: number | null;
}

/**
 * Upstream's check for hiera data left in os-apply-config's metadata: the command prints "empty" when there is none.
 * A command that is not installed means there is none; any other answer (a failing command included, as upstream)
 * means there may be.
 */
async function legacyHieraData(ctx: HookContext): Promise<LegacyData | null> {
  const command = ctx.env.HEAT_HIERA_ELEMENT_CHECK_CMD || DEFAULT_CHECK;
  const [file, ...args] = command.split(' ').filter((a) => a !== '');
  if (file === undefined) return null;
  const res = await ctx.spawn({ file, args, env: ctx.env });
  if (res.spawnError?.code === 'ENOENT') {
    ctx.log.info('legacy hiera data check skipped: command not found', { command: file });
    return null;
  }
  if (res.spawnError)
    throw new HookFailure(`the legacy hiera data check (${command}) could not run: ${res.spawnError.message}`);
  return res.stdout.trimEnd() === 'empty'
    ? null
    : { command, stdout: res.stdout, stderr: res.stderr, status: res.exitCode };
}
