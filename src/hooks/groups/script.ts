import path from 'node:path';
import { inputText } from '../../heat/deployment.js';
import type { BuiltinHook } from '../contract.js';
import type { HookDeclaration, ToolDeclaration } from '../declaration.js';
import { inputEntries, inputEnv } from '../hook-deployment.js';
import { pathSetting } from '../hook-paths.js';
import { result } from '../hook-result.js';
import { asksForChanges, scriptChanges } from '../kit/change-report.js';
import { runTool } from '../kit/run-tool.js';
import { prepareDir, readOutputs, removeOutputs, writeWorkFile } from '../kit/work-files.js';

// Group "script": the config is an executable (a #! line names its interpreter; without one /bin/sh runs it), the
// inputs are its environment, declared outputs come back from files. Upstream: heat-agents' hook-script.py.

const workingDir = (env: NodeJS.ProcessEnv) =>
  pathSetting(env, 'HEAT_SCRIPT_WORKING', '/var/lib/heat-config/heat-config-script');
const outputsDir = (env: NodeJS.ProcessEnv) =>
  pathSetting(env, 'HEAT_SCRIPT_OUTPUTS', '/var/run/heat-config/heat-config-script');
/** Longer input values are cut in the log (the script gets them whole). */
const LOGGED_VALUE_CHARS = 200;

/**
 * The script names its own interpreter in its #! line, and the hook starts the script itself; bash is the interpreter
 * script configs usually name, which is what doctor looks for.
 */
const INTERPRETER: ToolDeclaration = {
  name: 'bash',
  defaults: ['bash'],
  install: 'Install bash (the usual interpreter of script configs).',
};

export const declaration: HookDeclaration = { group: 'script', tool: INTERPRETER };

export const hook: BuiltinHook = {
  group: declaration.group,

  workFiles: (id, env) => [path.join(workingDir(env), id)],

  async run(deployment, ctx) {
    const { log, env } = ctx;
    const working = workingDir(env);
    const outputs = outputsDir(env);
    await prepareDir(outputs);
    await prepareDir(working);

    for (const [name, value] of inputEntries(deployment)) {
      const text = inputText(value);
      log.info('input', { [name]: text.length > LOGGED_VALUE_CHARS ? `${text.slice(0, LOGGED_VALUE_CHARS)}…` : text });
    }
    const outputsPath = path.join(outputs, deployment.id);
    const script = path.join(working, deployment.id);
    await removeOutputs(outputs, deployment.id);
    try {
      // Kept after the run, as upstream keeps it: it shows what ran.
      await writeWorkFile(script, inputText(deployment.config), 0o700);
      const run = await runTool(
        ctx,
        { file: script, cwd: working, env: { ...env, ...inputEnv(deployment, log), heat_outputs_path: outputsPath } },
        "the script's interpreter was not found: check the #! line at the top of the config",
        (_script, interpreter) =>
          `the script's interpreter (${interpreter}) was not found: check the #! line at the top of the config`,
      );
      if (run.status === 0) log.info('script completed', { script });
      else log.error('script failed', { script, exitCode: run.status });
      const changed = asksForChanges(env) ? await scriptChanges(outputsPath, log) : undefined;
      return result({ ...run, changed, outputs: await readOutputs(deployment, outputsPath, log) });
    } finally {
      await removeOutputs(outputs, deployment.id);
    }
  },
};
