import path from 'node:path';
import { inputText } from '../../heat/deployment.js';
import type { BuiltinHook, HookDeployment } from '../contract.js';
import type { HookDeclaration, ToolDeclaration } from '../declaration.js';
import { inputEntries } from '../hook-deployment.js';
import { pathSetting } from '../hook-paths.js';
import { result } from '../hook-result.js';
import { toolCommand } from '../kit/choose-tool.js';
import { notInstalled, runTool, type ToolOutcome } from '../kit/run-tool.js';
import { prepareDir, readOutputs, removeOutputs, writeWorkFile } from '../kit/work-files.js';

// Group "salt": the config is a state applied with a masterless `salt-call`. Upstream (hook-salt.py, salt's Python
// API) set every input as a top-level minion option, read in states as opts['name']; here the inputs are both pillar
// data (pillar['name']) and, through a minion configuration written for the deployment that includes the real one,
// minion options (opts['name']), so states written for upstream keep working.

const workingDir = (env: NodeJS.ProcessEnv) =>
  pathSetting(env, 'HEAT_SALT_WORKING', '/var/lib/heat-config/heat-config-salt');

// The agent's own signalling credentials stay out of both: the pillar travels on salt-call's command line, which
// other local users can read in the process list.
const AGENT_CREDENTIALS = new Set(['deploy_password', 'deploy_signal_id']);

const SALT: ToolDeclaration = {
  name: 'salt',
  variable: 'HEAT_SALT_CMD',
  defaults: ['salt-call'],
  install: "Install salt-minion (Salt's packages provide salt-call).",
};

export const declaration: HookDeclaration = { group: 'salt', tool: SALT };

export const hook: BuiltinHook = {
  group: declaration.group,

  workFiles: (id, env) => [path.join(workingDir(env), `${id}.sls`), path.join(workingDir(env), `${id}.minion`)],

  async run(deployment, ctx) {
    const { log, env } = ctx;
    const working = workingDir(env);
    const outputs = pathSetting(env, 'HEAT_SALT_OUTPUTS', '/var/run/heat-config/heat-config-salt');
    const minionConfig = pathSetting(env, 'SALT_MINION_CONFIG', '/etc/salt/minion');
    const command = await toolCommand(ctx, SALT);
    await prepareDir(outputs);
    await prepareDir(working);

    const { id, config } = deployment;
    const outputsPath = path.join(outputs, id);
    const inputs = [
      ...inputEntries(deployment).filter(([name]) => !AGENT_CREDENTIALS.has(name)),
      ['heat_outputs_path', outputsPath],
    ];
    const pillar = Object.fromEntries(inputs);
    // salt-call reads the file named "minion" in its configuration directory: the deployment's own directory holds
    // one that includes the real configuration (and its minion.d) and adds the inputs as options.
    const configDir = path.join(working, `${id}.minion`);
    const minion = { ...pillar, include: [minionConfig, path.join(path.dirname(minionConfig), 'minion.d', '*.conf')] };
    const stateFile = path.join(working, `${id}.sls`);
    const args = [
      '--local',
      '--config-dir',
      configDir,
      '--file-root',
      working,
      '--retcode-passthrough',
      '--out',
      'json',
      'state.sls',
      id,
      `pillar=${JSON.stringify(pillar)}`,
    ];

    await removeOutputs(outputs, id);
    try {
      // Both kept after the run, as upstream keeps the state file: they show what ran. A structured config becomes
      // JSON, which is valid YAML for salt.
      await writeWorkFile(
        stateFile,
        config !== null && typeof config === 'object' ? JSON.stringify(config, null, 2) : inputText(config),
        0o600,
      );
      await prepareDir(configDir);
      await writeWorkFile(path.join(configDir, 'minion'), `${JSON.stringify(minion, null, 2)}\n`, 0o600);
      const run = await runTool(ctx, { file: command, args, cwd: working, env }, notInstalled(env, SALT, command));
      const { status, problems, states } = judge(run);
      if (status === 0) log.info('salt state applied', { state: stateFile });
      else log.error('salt state failed', { state: stateFile, exitCode: status });
      const stderr =
        problems.length === 0
          ? run.stderr
          : `${run.stderr}${run.stderr === '' || run.stderr.endsWith('\n') ? '' : '\n'}${problems.join('\n')}\n`;
      const fromFiles = await readOutputs(deployment, outputsPath, log);
      return result({
        stdout: run.stdout,
        stderr,
        status,
        outputs: { ...stateOutputs(deployment, states), ...fromFiles },
      });
    } finally {
      await removeOutputs(outputs, id);
    }
  },
};

interface Judgement {
  readonly status: number;
  readonly problems: string[];
  readonly states: Record<string, unknown>;
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * The outcome of a salt-call run from its JSON output {"local": …}: a map of state results when the state ran
 * (failed if any has result false), or a list of error messages when it could not be rendered. salt's exit code
 * alone is not trusted when every state succeeded (as upstream, bug 1483336).
 */
function judge(run: ToolOutcome): Judgement {
  let ret: unknown;
  try {
    const parsed: unknown = JSON.parse(run.stdout);
    ret = isObject(parsed) ? parsed.local : undefined;
  } catch {
    ret = undefined;
  }
  const failed = (code: number) => (code === 0 ? 1 : code);
  if (isObject(ret)) {
    const problems = Object.entries(ret)
      .filter(([, state]) => isObject(state) && state.result === false)
      .map(([key, state]) => {
        const s = state as Record<string, unknown>;
        const comment = Array.isArray(s.comment) ? s.comment.join('\n') : inputText(s.comment);
        return `${inputText(s.__id__ ?? key)}: ${comment}`;
      });
    return { status: problems.length > 0 ? failed(run.status) : 0, problems, states: ret };
  }
  if (ret === undefined)
    return { status: failed(run.status), problems: ['salt-call printed no JSON result'], states: {} };
  return { status: failed(run.status), problems: (Array.isArray(ret) ? ret : [ret]).map(inputText), states: {} };
}

/**
 * Outputs from the salt return, for declared outputs named after a state's ID or its full state key: that state's
 * result object. Upstream read outputs from keys of its return dict too; files at heat_outputs_path take precedence.
 */
function stateOutputs(deployment: HookDeployment, states: Record<string, unknown>): Record<string, unknown> {
  const found: Array<[string, unknown]> = [];
  for (const { name } of deployment.outputs) {
    const state = Object.hasOwn(states, name)
      ? states[name]
      : Object.values(states).find((s) => isObject(s) && s.__id__ === name);
    if (state !== undefined) found.push([name, state]);
  }
  return Object.fromEntries(found);
}
