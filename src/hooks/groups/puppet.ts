import path from 'node:path';
import { inputText } from '../../heat/deployment.js';
import { HookFailure, type BuiltinHook, type HookDeployment } from '../contract.js';
import type { HookDeclaration, ToolDeclaration } from '../declaration.js';
import { inputEnv, inputValues } from '../hook-deployment.js';
import { pathSetting, underRoot } from '../hook-paths.js';
import { result } from '../hook-result.js';
import { asksForChanges, puppetChanges } from '../kit/change-report.js';
import { toolCommand } from '../kit/choose-tool.js';
import { hostnameF, notInstalled, runTool, type ToolOutcome } from '../kit/run-tool.js';
import { prepareDir, readOutputs, removeOutputs, writeWorkFile } from '../kit/work-files.js';

// Group "puppet": the config is a manifest applied with `puppet apply`, the inputs are facts (and optionally hiera
// data). Upstream: heat-agents' hook-puppet.py.

const workingDir = (env: NodeJS.ProcessEnv) =>
  pathSetting(env, 'HEAT_PUPPET_WORKING', '/var/lib/heat-config/heat-config-puppet');

const PUPPET: ToolDeclaration = {
  name: 'puppet',
  variable: 'HEAT_PUPPET_CMD',
  defaults: ['puppet'],
  install: "Install the puppet package (Debian, Ubuntu, Fedora) or Puppet's puppet-agent.",
};

export const declaration: HookDeclaration = { group: 'puppet', tool: PUPPET };

export const hook: BuiltinHook = {
  group: declaration.group,

  workFiles: (id, env) => [path.join(workingDir(env), `${id}.pp`)],

  async run(deployment, ctx) {
    const { log, env } = ctx;
    const working = workingDir(env);
    const outputs = pathSetting(env, 'HEAT_PUPPET_OUTPUTS', '/var/run/heat-config/heat-config-puppet');
    const command = await toolCommand(ctx, PUPPET);
    const logDir = pathSetting(env, 'HEAT_PUPPET_LOGDIR', '/var/run/heat-config/deployed');
    const hieraDir = pathSetting(env, 'HEAT_PUPPET_HIERA_DATADIR', '/etc/puppet/hieradata');
    await prepareDir(outputs);
    await prepareDir(working);

    const { options, id } = deployment;
    // An option given as null counts as given (and false), as upstream.
    const useFacter = Object.hasOwn(options, 'enable_facter') ? Boolean(options.enable_facter) : true;
    const facts: Record<string, string> = {};
    const fqdn = await hostnameF(ctx);
    if (fqdn) facts.FACTER_fqdn = fqdn;
    if (useFacter) Object.assign(facts, inputEnv(deployment, log, 'FACTER_'));
    if (options.enable_hiera) {
      const name = deployment.name;
      if (name === '' || name.includes('/') || name.includes('\0')) {
        throw new HookFailure(
          `enable_hiera needs a deployment name usable as a file name, not ${JSON.stringify(name)}`,
        );
      }
      await prepareDir(hieraDir);
      // Kept after the run: puppet runs of later deployments read it through the hiera hierarchy.
      await writeWorkFile(
        path.join(hieraDir, `heat_config_${name}.json`),
        JSON.stringify(inputValues(deployment)),
        0o600,
      );
      facts.FACTER_deploy_config_name = name;
    }
    const outputsPath = path.join(outputs, id);
    facts.FACTER_heat_outputs_path = outputsPath;

    const manifest = path.join(working, `${id}.pp`);
    const args = ['apply', '--color', 'false', '--detailed-exitcodes', '--logdest', 'console'];
    if (options.modulepath) args.push('--modulepath', inputText(options.modulepath));
    if (options.tags)
      args.push('--tags', Array.isArray(options.tags) ? options.tags.join(',') : inputText(options.tags));
    if (options.enable_debug) args.push('--debug', '--logdest', underRoot(env, '/var/log/puppet/heat-debug.log'));
    if (options.enable_verbose) args.push('--verbose', '--logdest', underRoot(env, '/var/log/puppet/heat-verbose.log'));
    args.push(manifest);

    await removeOutputs(outputs, id);
    try {
      // Kept after the run, as upstream keeps it: it shows what ran.
      await writeWorkFile(manifest, inputText(deployment.config), 0o600);
      const run = await runTool(
        ctx,
        { file: command, args, cwd: working, env: { ...env, ...facts } },
        notInstalled(env, PUPPET, command),
      );
      await writeLogs(logDir, deployment, run);
      // --detailed-exitcodes: 2 means changes were applied, which is a success.
      const status = run.status === 2 ? 0 : run.status;
      if (status === 0) log.info('manifest applied', { manifest });
      else log.error('manifest failed', { manifest, exitCode: run.status });
      const changed = asksForChanges(env) ? puppetChanges(run.status) : undefined;
      return result({ ...run, status, changed, outputs: await readOutputs(deployment, outputsPath, log) });
    } finally {
      await removeOutputs(outputs, id);
    }
  },
};

/** puppet's output in <logdir>/<creation time>-<id>-{stdout,stderr}.log, where the upstream hook keeps it. */
async function writeLogs(logDir: string, deployment: HookDeployment, run: ToolOutcome): Promise<void> {
  const created = deployment.creationTime ?? new Date().toISOString();
  const base = path.join(logDir, `${created.replace(/[:T]/g, '-').replace(/[^\w.+-]/g, '_')}-${deployment.id}`);
  await prepareDir(logDir);
  await writeWorkFile(`${base}-stdout.log`, run.stdout, 0o600);
  await writeWorkFile(`${base}-stderr.log`, run.stderr, 0o600);
}
