// heat-config hook for group "chef": runs chef-client in local mode with the deployment's config as the run list and
// its inputs as node attributes, optionally from a kitchen cloned with git. Contract and differences from the
// upstream hook: hooks/README.md. Run through the launcher hooks/chef.
import { readdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  HookFailure, envValue, fromEnv, pathFromEnv, hostnameF, inputEntries, notInstalled, prepareDir, readOutputs, removeFiles,
  removeOutputs, result, runHook, runTool, writeWorkFile,
} from './heat-hook.mjs';

/** A Ruby single-quoted string literal. */
const rubyString = (text) => `'${text.replace(/[\\']/g, (c) => `\\${c}`)}'`;

await runHook('chef', async (deployment, log) => {
  const working = pathFromEnv('HEAT_CHEF_WORKING', '/var/lib/heat-config/heat-config-chef');
  const outputs = pathFromEnv('HEAT_CHEF_OUTPUTS', '/var/run/heat-config/heat-config-chef');
  const command = fromEnv('HEAT_CHEF_CMD', 'chef-client');
  await prepareDir(outputs);
  await prepareDir(working);

  const { options, id } = deployment;
  const kitchenPath = path.resolve(working, options.kitchen_path ? envValue(options.kitchen_path) : 'kitchen');
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
    const cloned = await cloneKitchen(envValue(options.kitchen), kitchenPath, working, log);
    if (cloned) return cloned;
  }

  const runList = parseRunList(deployment.config);
  const attributes = [];
  for (const [name, value] of inputEntries(deployment)) {
    if (name === 'environment') client.push(`environment ${rubyString(envValue(value))}`);
    // deploy_* inputs are the agent's (ids, signal URL, credentials), not attributes for recipes.
    else if (!name.startsWith('deploy_')) attributes.push([name, value]);
  }
  const node = { ...Object.fromEntries(attributes), run_list: runList };

  let fqdn = await hostnameF(log);
  if (!fqdn) {
    fqdn = os.hostname();
    log.warn(`node file named after the host name ${fqdn} instead`);
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
    const run = await runTool(command, ['-z', '--config', clientFile, '-j', nodeFile], {
      cwd: working,
      env: { ...process.env, heat_outputs_path: outputsPath },
      log,
      missing: notInstalled('chef', command, 'HEAT_CHEF_CMD',
        'Install Chef Infra Client or Cinc Client (chef-client); the distributions do not package it.'),
    });
    if (run.status !== 0) log.error(`chef-client failed: status ${run.status}`);
    return result({ ...run, outputs: await readOutputs(deployment, outputsPath, log) });
  } finally {
    // The node file holds every input; chef-client in local mode also saves the node into it.
    await removeFiles(nodeFile, clientFile);
    await removeOutputs(outputs, id);
  }
});

/** The run list: the config as a JSON array (text, or already an array in a structured config). */
function parseRunList(config) {
  let list = config;
  if (typeof config === 'string') {
    try {
      list = JSON.parse(config);
    } catch (err) {
      throw new HookFailure(`the chef config is not JSON (${err.message}): it must be a run list such as ` +
        '["recipe[app]"]');
    }
  }
  if (!Array.isArray(list)) {
    throw new HookFailure('the chef config must be a JSON array (a run list such as ["recipe[app]"])');
  }
  return list;
}

/**
 * Clones the kitchen afresh into kitchenPath. Returns a failure result when git fails, else null. An earlier clone
 * (a directory with .git) is replaced: upstream removed it only on UPDATE, so any other deployment with a kitchen
 * failed on the existing directory. Any other non-empty directory is left alone and fails the deployment.
 */
async function cloneKitchen(kitchen, kitchenPath, working, log) {
  const entries = await readdir(kitchenPath).catch((err) => {
    if (err.code === 'ENOENT') return [];
    throw err;
  });
  if (entries.includes('.git')) {
    await removeFiles(kitchenPath);
  } else if (entries.length > 0) {
    throw new HookFailure(`kitchen_path ${kitchenPath} is a non-empty directory that is not a git clone: not replacing ` +
      'it with the kitchen; point kitchen_path at a new directory or remove it');
  }
  const run = await runTool('git', ['clone', '--', kitchen, kitchenPath], {
    cwd: working,
    env: process.env,
    log,
    missing: `git is not installed (PATH=${process.env.PATH ?? ''}): install the git package, which the chef hook ` +
      'needs to clone the kitchen option\'s repository.',
  });
  if (run.status === 0) return null;
  log.error(`cloning the kitchen into ${kitchenPath} failed`);
  return result(run);
}
