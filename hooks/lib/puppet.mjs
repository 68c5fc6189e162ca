// heat-config hook for group "puppet": applies the deployment's config as a manifest with `puppet apply`, inputs as
// facts (and optionally hiera data). Contract and differences from the upstream hook: hooks/README.md.
// Run through the launcher hooks/puppet.
import path from 'node:path';
import {
  HookFailure, envValue, fromEnv, pathFromEnv, underRoot, hostnameF, inputEnv, inputValues, notInstalled, prepareDir, readOutputs,
  removeFiles, removeOutputs, result, runHook, runTool, writeWorkFile,
} from './heat-hook.mjs';

await runHook('puppet', async (deployment, log) => {
  const working = pathFromEnv('HEAT_PUPPET_WORKING', '/var/lib/heat-config/heat-config-puppet');
  const outputs = pathFromEnv('HEAT_PUPPET_OUTPUTS', '/var/run/heat-config/heat-config-puppet');
  const command = fromEnv('HEAT_PUPPET_CMD', 'puppet');
  const logDir = pathFromEnv('HEAT_PUPPET_LOGDIR', '/var/run/heat-config/deployed');
  const hieraDir = pathFromEnv('HEAT_PUPPET_HIERA_DATADIR', '/etc/puppet/hieradata');
  await prepareDir(outputs);
  await prepareDir(working);

  const { options, id } = deployment;
  // An option given as null counts as given (and false), as upstream.
  const useFacter = Object.hasOwn(options, 'enable_facter') ? options.enable_facter : true;
  const useHiera = options.enable_hiera;
  const facts = {};
  const fqdn = await hostnameF(log);
  if (fqdn) facts.FACTER_fqdn = fqdn;
  if (useFacter) Object.assign(facts, inputEnv(deployment, log, 'FACTER_'));
  if (useHiera) {
    const name = deployment.name;
    if (typeof name !== 'string' || name === '' || name.includes('/') || name.includes('\0')) {
      throw new HookFailure(`enable_hiera needs a deployment name usable as a file name, not ${JSON.stringify(name)}`);
    }
    await prepareDir(hieraDir);
    // Kept after the run: puppet runs of later deployments read it through the hiera hierarchy.
    const hieraFile = path.join(hieraDir, `heat_config_${name}.json`);
    await writeWorkFile(hieraFile, JSON.stringify(inputValues(deployment)), 0o600);
    facts.FACTER_deploy_config_name = name;
  }
  const outputsPath = path.join(outputs, id);
  facts.FACTER_heat_outputs_path = outputsPath;

  const manifest = path.join(working, `${id}.pp`);
  const args = ['apply', '--color', 'false', '--detailed-exitcodes', '--logdest', 'console'];
  if (options.modulepath) args.push('--modulepath', envValue(options.modulepath));
  if (options.tags) args.push('--tags', Array.isArray(options.tags) ? options.tags.join(',') : envValue(options.tags));
  if (options.enable_debug) args.push('--debug', '--logdest', underRoot('/var/log/puppet/heat-debug.log'));
  if (options.enable_verbose) args.push('--verbose', '--logdest', underRoot('/var/log/puppet/heat-verbose.log'));
  args.push(manifest);

  await removeOutputs(outputs, id);
  try {
    await writeWorkFile(manifest, envValue(deployment.config), 0o700);
    const run = await runTool(command, args, {
      cwd: working,
      env: { ...process.env, ...facts },
      log,
      missing: notInstalled('puppet', command, 'HEAT_PUPPET_CMD',
        'Install the puppet package (Debian, Ubuntu, Fedora) or Puppet\'s puppet-agent.'),
    });
    await writeLogs(logDir, deployment, run);
    // --detailed-exitcodes: 2 means changes were applied, which is a success.
    const status = run.status === 2 ? 0 : run.status;
    if (status === 0) log.info(`completed ${manifest}`);
    else log.error(`error running ${manifest}: status ${run.status}`);
    return result({ ...run, status, outputs: await readOutputs(deployment, outputsPath, log) });
  } finally {
    await removeFiles(manifest);
    await removeOutputs(outputs, id);
  }
});

/** puppet's output in <logdir>/<creation time>-<id>-{stdout,stderr}.log, where the upstream hook kept it. */
async function writeLogs(logDir, deployment, run) {
  const created = typeof deployment.creation_time === 'string' ? deployment.creation_time : new Date().toISOString();
  const base = path.join(logDir, `${created.replace(/[:T]/g, '-').replace(/[^\w.+-]/g, '_')}-${deployment.id}`);
  await prepareDir(logDir);
  await writeWorkFile(`${base}-stdout.log`, run.stdout, 0o600);
  await writeWorkFile(`${base}-stderr.log`, run.stderr, 0o600);
}
