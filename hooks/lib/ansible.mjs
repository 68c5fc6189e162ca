// heat-config hook for group "ansible": runs the deployment's config as a playbook with ansible-playbook, inputs as
// extra vars. Contract and differences from the upstream hook: hooks/README.md.
// Run through the launcher hooks/ansible.
import path from 'node:path';
import {
  envValue, fromEnv, pathFromEnv, inputEntries, notInstalled, prepareDir, readOutputs, removeFiles, removeOutputs, result,
  runHook, runTool, writeWorkFile,
} from './heat-hook.mjs';

await runHook('ansible', async (deployment, log) => {
  const working = pathFromEnv('HEAT_ANSIBLE_WORKING', '/var/lib/heat-config/heat-config-ansible');
  const outputs = pathFromEnv('HEAT_ANSIBLE_OUTPUTS', '/var/run/heat-config/heat-config-ansible');
  const command = fromEnv('HEAT_ANSIBLE_CMD', 'ansible-playbook');
  await prepareDir(outputs);
  await prepareDir(working);

  const { options, id } = deployment;
  const playbookText = envValue(deployment.config);
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
  const inventory = options.inventory ? path.resolve(working, envValue(options.inventory))
    : fromEnv('HEAT_ANSIBLE_INVENTORY', 'localhost,');
  const playbook = path.join(working, `${id}_playbook.yaml`);
  const varsFile = path.join(working, `${id}_variables.json`);
  const list = (v) => (Array.isArray(v) ? v.join(',') : envValue(v));
  const args = ['-i', inventory];
  if (options.modulepath) args.push('--module-path', envValue(options.modulepath));
  if (options.skip_tags) args.push('--skip-tags', list(options.skip_tags));
  if (options.tags) args.push('--tags', list(options.tags));
  args.push(playbook, '--extra-vars', `@${varsFile}`);
  const env = { ...process.env };
  if (options.callback_plugins) env.ANSIBLE_CALLBACK_PLUGINS = envValue(options.callback_plugins);

  await removeOutputs(outputs, id);
  try {
    await writeWorkFile(varsFile, JSON.stringify(variables), 0o600);
    await writeWorkFile(playbook, playbookText, 0o600);
    const run = await runTool(command, args, {
      cwd: working,
      env,
      log,
      missing: notInstalled('ansible', command, 'HEAT_ANSIBLE_CMD',
        'Install the ansible package (ansible-core on CentOS and RHEL).'),
    });
    if (run.status === 0) log.info(`completed ${playbook}`);
    else log.error(`error running ${playbook}: status ${run.status}`);
    return result({ ...run, outputs: await readOutputs(deployment, outputsPath, log) });
  } finally {
    await removeFiles(varsFile, playbook);
    await removeOutputs(outputs, id);
  }
});
