// heat-config hook for group "script": runs the deployment's config as an executable, inputs in its environment.
// Contract and differences from the upstream hook: hooks/README.md.
// Run through the launcher hooks/script.
import path from 'node:path';
import {
  envValue, pathFromEnv, inputEntries, inputEnv, prepareDir, readOutputs, removeFiles, removeOutputs, result, runHook,
  runTool, writeWorkFile,
} from './heat-hook.mjs';

await runHook('script', async (deployment, log) => {
  const working = pathFromEnv('HEAT_SCRIPT_WORKING', '/var/lib/heat-config/heat-config-script');
  const outputs = pathFromEnv('HEAT_SCRIPT_OUTPUTS', '/var/run/heat-config/heat-config-script');
  await prepareDir(outputs);
  await prepareDir(working);

  for (const [name, value] of inputEntries(deployment)) {
    const text = envValue(value);
    log.info(`${name}=${text.length > 200 ? `${text.slice(0, 200)}…` : text}`);
  }
  const outputsPath = path.join(outputs, deployment.id);
  const env = { ...process.env, ...inputEnv(deployment, log), heat_outputs_path: outputsPath };
  const script = path.join(working, deployment.id);

  await removeOutputs(outputs, deployment.id);
  try {
    await writeWorkFile(script, envValue(deployment.config), 0o700);
    const run = await runTool(script, [], {
      cwd: working,
      env,
      log,
      missing: 'the script\'s interpreter was not found: check the #! line at the top of the config',
    });
    if (run.status === 0) log.info(`completed ${script}`);
    else log.error(`error running ${script}: status ${run.status}`);
    return result({ ...run, outputs: await readOutputs(deployment, outputsPath, log) });
  } finally {
    await removeFiles(script);
    await removeOutputs(outputs, deployment.id);
  }
});
