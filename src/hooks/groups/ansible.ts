import path from 'node:path';
import { inputText } from '../../heat/deployment.js';
import type { BuiltinHook } from '../contract.js';
import type { HookDeclaration, ToolDeclaration } from '../declaration.js';
import { inputEntries } from '../hook-deployment.js';
import { commandSetting, pathSetting } from '../hook-paths.js';
import { result } from '../hook-result.js';
import { ansibleChanges, asksForChanges } from '../kit/change-report.js';
import { toolCommand } from '../kit/choose-tool.js';
import { notInstalled, runTool } from '../kit/run-tool.js';
import { prepareDir, readOutputs, removeOutputs, writeWorkFile } from '../kit/work-files.js';

// Group "ansible": the config is a playbook run with ansible-playbook, the inputs are extra vars. Upstream:
// heat-agents' hook-ansible.py.

const workingDir = (env: NodeJS.ProcessEnv) =>
  pathSetting(env, 'HEAT_ANSIBLE_WORKING', '/var/lib/heat-config/heat-config-ansible');

const ANSIBLE: ToolDeclaration = {
  name: 'ansible',
  variable: 'HEAT_ANSIBLE_CMD',
  defaults: ['ansible-playbook'],
  install: 'Install the ansible package (ansible-core on CentOS and RHEL).',
};

export const declaration: HookDeclaration = { group: 'ansible', tool: ANSIBLE };

export const hook: BuiltinHook = {
  group: declaration.group,

  workFiles: (id, env) => [
    path.join(workingDir(env), `${id}_playbook.yaml`),
    path.join(workingDir(env), `${id}_variables.json`),
  ],

  async run(deployment, ctx) {
    const { log, env } = ctx;
    const working = workingDir(env);
    const outputs = pathSetting(env, 'HEAT_ANSIBLE_OUTPUTS', '/var/run/heat-config/heat-config-ansible');
    const command = await toolCommand(ctx, ANSIBLE);
    await prepareDir(outputs);
    await prepareDir(working);

    const { options, id } = deployment;
    const playbookText = inputText(deployment.config);
    if (playbookText === '') {
      log.warn('no config, nothing to do');
      return result({ stderr: 'The deployment has no config (playbook): ansible-playbook was not run.\n', status: 0 });
    }
    const outputsPath = path.join(outputs, id);
    const variables = Object.fromEntries([
      ['heat_config_id', id],
      ...inputEntries(deployment),
      ['heat_outputs_path', outputsPath],
    ]);
    const inventory = options.inventory
      ? path.resolve(working, inputText(options.inventory))
      : commandSetting(env, 'HEAT_ANSIBLE_INVENTORY', 'localhost,');
    const playbook = path.join(working, `${id}_playbook.yaml`);
    const varsFile = path.join(working, `${id}_variables.json`);
    const list = (v: unknown) => (Array.isArray(v) ? v.join(',') : inputText(v));
    const args = ['-i', inventory];
    if (options.modulepath) args.push('--module-path', inputText(options.modulepath));
    if (options.skip_tags) args.push('--skip-tags', list(options.skip_tags));
    if (options.tags) args.push('--tags', list(options.tags));
    args.push(playbook, '--extra-vars', `@${varsFile}`);
    const toolEnv = { ...env };
    if (options.callback_plugins) toolEnv.ANSIBLE_CALLBACK_PLUGINS = inputText(options.callback_plugins);

    await removeOutputs(outputs, id);
    try {
      // Both kept after the run, as upstream keeps them: they show what ran.
      await writeWorkFile(varsFile, JSON.stringify(variables), 0o600);
      await writeWorkFile(playbook, playbookText, 0o600);
      const run = await runTool(
        ctx,
        { file: command, args, cwd: working, env: toolEnv },
        notInstalled(env, ANSIBLE, command),
      );
      if (run.status === 0) log.info('playbook completed', { playbook });
      else log.error('playbook failed', { playbook, exitCode: run.status });
      const changed = asksForChanges(env) ? ansibleChanges(run.stdout) : undefined;
      return result({ ...run, changed, outputs: await readOutputs(deployment, outputsPath, log) });
    } finally {
      await removeOutputs(outputs, id);
    }
  },
};
