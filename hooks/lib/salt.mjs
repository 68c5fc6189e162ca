// heat-config hook for group "salt": applies the deployment's config as a state with a masterless `salt-call`, inputs
// as pillar data. Contract and differences from the upstream hook (which used salt's Python API): hooks/README.md.
// Run through the launcher hooks/salt.
import path from 'node:path';
import {
  envValue, fromEnv, pathFromEnv, inputEntries, notInstalled, prepareDir, readOutputs, removeFiles, removeOutputs, result,
  runHook, runTool, writeWorkFile,
} from './heat-hook.mjs';

// The agent's own signalling credentials stay out of the pillar: it travels on salt-call's command line, which
// other local users can read in the process list.
const AGENT_CREDENTIALS = new Set(['deploy_password', 'deploy_signal_id']);

await runHook('salt', async (deployment, log) => {
  const working = pathFromEnv('HEAT_SALT_WORKING', '/var/lib/heat-config/heat-config-salt');
  const outputs = pathFromEnv('HEAT_SALT_OUTPUTS', '/var/run/heat-config/heat-config-salt');
  const minionConfig = pathFromEnv('SALT_MINION_CONFIG', '/etc/salt/minion');
  const command = fromEnv('HEAT_SALT_CMD', 'salt-call');
  await prepareDir(outputs);
  await prepareDir(working);

  const { id, config } = deployment;
  const outputsPath = path.join(outputs, id);
  const pillar = Object.fromEntries([
    ...inputEntries(deployment).filter(([name]) => !AGENT_CREDENTIALS.has(name)),
    ['heat_outputs_path', outputsPath],
  ]);
  if (path.basename(minionConfig) !== 'minion') {
    log.warn(`salt-call reads the file named "minion" in ${path.dirname(minionConfig)}, not ${minionConfig}`);
  }
  const stateFile = path.join(working, `${id}.sls`);
  const args = [
    '--local', '--config-dir', path.dirname(minionConfig), '--file-root', working, '--retcode-passthrough',
    '--out', 'json', 'state.sls', id, `pillar=${JSON.stringify(pillar)}`,
  ];

  await removeOutputs(outputs, id);
  try {
    // A structured config becomes JSON, which is valid YAML for salt.
    const text = config !== null && typeof config === 'object' ? JSON.stringify(config, null, 2) : envValue(config);
    await writeWorkFile(stateFile, text, 0o700);
    const run = await runTool(command, args, {
      cwd: working,
      env: process.env,
      log,
      missing: notInstalled('salt', command, 'HEAT_SALT_CMD',
        'Install salt-minion (Salt\'s packages provide salt-call).'),
    });
    const { status, problems, states } = judge(run);
    if (status === 0) log.info(`applied salt state ${stateFile}`);
    else log.error(`salt state ${stateFile} failed: status ${status}`);
    const stderr = problems.length === 0 ? run.stderr
      : `${run.stderr}${run.stderr === '' || run.stderr.endsWith('\n') ? '' : '\n'}${problems.join('\n')}\n`;
    const fromFiles = await readOutputs(deployment, outputsPath, log);
    const outputValues = { ...stateOutputs(deployment, states), ...fromFiles };
    return result({ stdout: run.stdout, stderr, status, outputs: outputValues });
  } finally {
    await removeFiles(stateFile);
    await removeOutputs(outputs, id);
  }
});

/**
 * The outcome of a salt-call run from its JSON output {"local": …}: a map of state results when the state ran
 * (failed if any has result false), or a list of error messages when it could not be rendered. salt's exit code
 * alone is not trusted when every state succeeded (as upstream, bug 1483336).
 */
function judge(run) {
  let ret;
  try {
    ret = JSON.parse(run.stdout).local;
  } catch {
    ret = undefined;
  }
  const failed = (code) => (code === 0 ? 1 : code);
  if (ret !== null && typeof ret === 'object' && !Array.isArray(ret)) {
    const problems = Object.entries(ret)
      .filter(([, state]) => state !== null && typeof state === 'object' && state.result === false)
      .map(([key, state]) => {
        const comment = Array.isArray(state.comment) ? state.comment.join('\n') : envValue(state.comment);
        return `${state.__id__ ?? key}: ${comment}`;
      });
    return { status: problems.length > 0 ? failed(run.status) : 0, problems, states: ret };
  }
  if (ret === undefined) {
    return { status: failed(run.status), problems: ['salt-call printed no JSON result'], states: {} };
  }
  return { status: failed(run.status), problems: (Array.isArray(ret) ? ret : [ret]).map(envValue), states: {} };
}

/**
 * Outputs from the salt return, for declared outputs named after a state's ID or its full state key: that state's
 * result object. Upstream read outputs from keys of its return dict too; files at heat_outputs_path take precedence.
 */
function stateOutputs(deployment, states) {
  const found = [];
  for (const { name } of deployment.outputs) {
    const state = Object.hasOwn(states, name) ? states[name]
      : Object.values(states).find((s) => s !== null && typeof s === 'object' && s.__id__ === name);
    if (state !== undefined) found.push([name, state]);
  }
  return Object.fromEntries(found);
}
