import { readdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { inputText } from '../../heat/deployment.js';
import { HookFailure, type BuiltinHook, type HookContext, type HookOutcome } from '../contract.js';
import { inputEntries } from '../hook-deployment.js';
import { commandSetting, pathSetting } from '../hook-paths.js';
import { result } from '../hook-result.js';
import { hostnameF, notInstalled, runTool } from '../kit/run-tool.js';
import { prepareDir, readOutputs, removeFiles, removeOutputs, writeWorkFile } from '../kit/work-files.js';

// Group "chef": chef-client in local mode with the config as the run list and the inputs as node attributes,
// optionally from a kitchen cloned with git. Upstream: heat-agents' hook-chef.py. Its node file and client.rb are per
// machine, not per deployment: each run rewrites them, and they stay for the operator to read, as upstream's do.

const workingDir = (env: NodeJS.ProcessEnv) =>
  pathSetting(env, 'HEAT_CHEF_WORKING', '/var/lib/heat-config/heat-config-chef');

/** A Ruby single-quoted string literal. */
const rubyString = (text: string) => `'${text.replace(/[\\']/g, (c) => `\\${c}`)}'`;

export const hook: BuiltinHook = {
  group: 'chef',

  workFiles: () => [],

  async run(deployment, ctx) {
    const { log, env } = ctx;
    const working = workingDir(env);
    const outputs = pathSetting(env, 'HEAT_CHEF_OUTPUTS', '/var/run/heat-config/heat-config-chef');
    const command = commandSetting(env, 'HEAT_CHEF_CMD', 'chef-client');
    await prepareDir(outputs);
    await prepareDir(working);

    const { options, id } = deployment;
    const kitchenPath = path.resolve(working, options.kitchen_path ? inputText(options.kitchen_path) : 'kitchen');
    const client = [
      'log_level :debug',
      'log_location STDOUT',
      'local_mode true',
      'chef_zero.enabled true',
      `cookbook_path ${rubyString(path.join(kitchenPath, 'cookbooks'))}`,
      `role_path ${rubyString(path.join(kitchenPath, 'roles'))}`,
      `environment_path ${rubyString(path.join(kitchenPath, 'environments'))}`,
    ];
    if (options.kitchen) {
      const failed = await cloneKitchen(ctx, inputText(options.kitchen), kitchenPath, working);
      if (failed) return failed;
    }

    const runList = parseRunList(deployment.config);
    const attributes: Array<[string, unknown]> = [];
    for (const [name, value] of inputEntries(deployment)) {
      if (name === 'environment') client.push(`environment ${rubyString(inputText(value))}`);
      // deploy_* inputs are the agent's (ids, signal URL, credentials), not attributes for recipes.
      else if (!name.startsWith('deploy_')) attributes.push([name, value]);
    }
    const node = { ...Object.fromEntries(attributes), run_list: runList };

    let fqdn = await hostnameF(ctx);
    if (!fqdn) {
      fqdn = os.hostname();
      log.warn('node file named after the host name instead', { hostname: fqdn });
    }
    const nodeDir = path.join(working, 'node');
    const nodeFile = path.join(nodeDir, `${fqdn.replace(/\//g, '_')}.json`);
    client.push(`node_path ${rubyString(nodeDir)}`);
    const clientFile = path.join(working, 'client.rb');
    const outputsPath = path.join(outputs, id);

    await removeOutputs(outputs, id);
    try {
      await prepareDir(nodeDir);
      await writeWorkFile(nodeFile, JSON.stringify(node, null, 4), 0o600);
      await writeWorkFile(clientFile, `${client.join('\n')}\n`, 0o600);
      const run = await runTool(
        ctx,
        {
          file: command,
          args: ['-z', '--config', clientFile, '-j', nodeFile],
          cwd: working,
          env: { ...env, heat_outputs_path: outputsPath },
        },
        notInstalled(
          env,
          'chef',
          command,
          'HEAT_CHEF_CMD',
          'Install Chef Infra Client or Cinc Client (chef-client); the distributions do not package it.',
        ),
      );
      if (run.status !== 0) log.error('chef-client failed', { exitCode: run.status });
      return result({ ...run, outputs: await readOutputs(deployment, outputsPath, log) });
    } finally {
      await removeOutputs(outputs, id);
    }
  },
};

/** The run list: the config as a JSON array (text, or already an array in a structured config). */
function parseRunList(config: unknown): unknown[] {
  let list = config;
  if (typeof config === 'string') {
    try {
      list = JSON.parse(config);
    } catch (err) {
      throw new HookFailure(
        `the chef config is not JSON (${(err as Error).message}): it must be a run list such as ["recipe[app]"]`,
      );
    }
  }
  if (!Array.isArray(list))
    throw new HookFailure('the chef config must be a JSON array (a run list such as ["recipe[app]"])');
  return list;
}

/**
 * Clones the kitchen afresh into kitchenPath. Returns a failure result when git fails, else null. An earlier clone (a
 * directory with .git) is replaced: upstream removed it only on UPDATE, so any other deployment with a kitchen failed
 * on the existing directory. Any other non-empty directory is left alone and fails the deployment.
 */
async function cloneKitchen(
  ctx: HookContext,
  kitchen: string,
  kitchenPath: string,
  working: string,
): Promise<HookOutcome | null> {
  const entries = await readdir(kitchenPath).catch((err: NodeJS.ErrnoException): string[] => {
    if (err.code === 'ENOENT') return [];
    throw err;
  });
  if (entries.includes('.git')) {
    await removeFiles(kitchenPath);
  } else if (entries.length > 0) {
    throw new HookFailure(
      `kitchen_path ${kitchenPath} is a non-empty directory that is not a git clone: not replacing it with the kitchen; point kitchen_path at a new directory or remove it`,
    );
  }
  const run = await runTool(
    ctx,
    { file: 'git', args: ['clone', '--', kitchen, kitchenPath], cwd: working, env: ctx.env },
    `git is not installed (PATH=${ctx.env.PATH ?? ''}): install the git package, which the chef hook needs to clone the kitchen option's repository.`,
  );
  if (run.status === 0) return null;
  ctx.log.error('cloning the kitchen failed', { kitchenPath });
  return result(run);
}
