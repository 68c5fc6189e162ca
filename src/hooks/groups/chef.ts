import os from 'node:os';
import path from 'node:path';
import { inputText } from '../../heat/deployment.js';
import { HookFailure, type BuiltinHook, type HookDeployment } from '../contract.js';
import type { HookDeclaration, ToolDeclaration } from '../declaration.js';
import { inputEntries } from '../hook-deployment.js';
import { pathSetting } from '../hook-paths.js';
import { result } from '../hook-result.js';
import { asksForChanges, chefChanges } from '../kit/change-report.js';
import { toolCommand } from '../kit/choose-tool.js';
import { hostnameF, notInstalled, runTool } from '../kit/run-tool.js';
import { prepareDir, readOutputs, removeOutputs, writeWorkFile } from '../kit/work-files.js';
import { clientConfig } from '../chef/client-config.js';
import { prepareKitchen, type Kitchen } from '../chef/kitchen.js';
import type { HookLog } from '../kit/hook-log.js';

// Group "chef": chef-client in local mode with the config as the run list and the inputs as node attributes, with
// cookbooks from the deployment's sources (src/hooks/chef/: git at a ref, tarballs, Berkshelf, Policyfiles).
// Upstream: heat-agents' hook-chef.py. Its node file and client.rb are per machine, not per deployment: each run
// rewrites them, and they stay for the operator to read, as upstream's do.

const workingDir = (env: NodeJS.ProcessEnv) =>
  pathSetting(env, 'HEAT_CHEF_WORKING', '/var/lib/heat-config/heat-config-chef');

const CHEF: ToolDeclaration = {
  name: 'chef',
  variable: 'HEAT_CHEF_CMD',
  defaults: ['chef-client'],
  install: 'Install Chef Infra Client or Cinc Client (chef-client); the distributions do not package it.',
};

export const declaration: HookDeclaration = { group: 'chef', tool: CHEF };

export const hook: BuiltinHook = {
  group: declaration.group,

  workFiles: () => [],

  async run(deployment, ctx) {
    const { log, env } = ctx;
    const working = workingDir(env);
    const outputs = pathSetting(env, 'HEAT_CHEF_OUTPUTS', '/var/run/heat-config/heat-config-chef');
    const command = await toolCommand(ctx, CHEF);
    await prepareDir(outputs);
    await prepareDir(working);

    const { id } = deployment;
    const runList = parseRunList(deployment.config);
    const kitchen = await prepareKitchen(ctx, deployment, working);
    if (kitchen.policy && runList.length > 0)
      throw new HookFailure(
        'the kitchen has a Policyfile.rb, whose run list chef-client runs: the config must be an empty run list ([])',
      );

    const { node, environment } = nodeAttributes(deployment, kitchen, runList, log);

    let fqdn = await hostnameF(ctx);
    if (!fqdn) {
      fqdn = os.hostname();
      log.warn('node file named after the host name instead', { hostname: fqdn });
    }
    const nodeDir = path.join(working, 'node');
    const nodeFile = path.join(nodeDir, `${fqdn.replace(/\//g, '_')}.json`);
    const client = clientConfig(kitchen, nodeDir, environment);
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
        notInstalled(env, CHEF, command),
      );
      if (run.status !== 0) log.error('chef-client failed', { exitCode: run.status });
      const changed = asksForChanges(env) ? chefChanges(run.stdout) : undefined;
      return result({ ...run, changed, outputs: await readOutputs(deployment, outputsPath, log) });
    } finally {
      await removeOutputs(outputs, id);
    }
  },
};

/** The node JSON (the inputs as attributes, and the run list) and the environment input's value. */
function nodeAttributes(deployment: HookDeployment, kitchen: Kitchen, runList: unknown[], log: HookLog) {
  const attributes: Array<[string, unknown]> = [];
  let environment: string | undefined;
  for (const [name, value] of inputEntries(deployment)) {
    if (name === 'environment') environment = inputText(value);
    // deploy_* inputs are the agent's (ids, signal URL, credentials), and the kitchen's credentials are for fetching
    // it: neither is an attribute for recipes.
    else if (!name.startsWith('deploy_') && !kitchen.credentialInputs.has(name)) attributes.push([name, value]);
  }
  if (kitchen.policy && environment !== undefined)
    log.warn('environment input not used: a policy has no environment', { policy: kitchen.policy.name });
  // In policy mode chef-client refuses a run list in the node JSON.
  const node = { ...Object.fromEntries(attributes), ...(kitchen.policy ? {} : { run_list: runList }) };
  return { node, environment };
}

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
