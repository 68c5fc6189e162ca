import path from 'node:path';
import { errorMessage } from '../../errors.js';
import { writeFileAtomic } from '../../util/atomic-write.js';
import { ROOT_ENV } from '../../util/rooted-path.js';
import { parseInit } from '../cfn-init/model.js';
import { createInitRun, type InitRun } from '../cfn-init/run-state.js';
import { runConfigs } from '../cfn-init/runner.js';
import { HookFailure, type BuiltinHook, type HookContext } from '../contract.js';
import type { HookDeclaration, ToolDeclaration } from '../declaration.js';
import { pathSetting } from '../hook-paths.js';
import { result } from '../hook-result.js';
import { chooseTool, spawnProbe } from '../kit/choose-tool.js';
import { notInstalled, runTool } from '../kit/run-tool.js';
import { prepareDir } from '../kit/work-files.js';

// Group "cfn-init": the config is the AWS::CloudFormation::Init section. Upstream (heat-agents' hook-cfn-init.py)
// saves it as cfn-init's last metadata and runs heat-cfntools' cfn-init on it; this hook saves it the same way (other
// tools read it) and applies it itself (src/hooks/cfn-init/). HEAT_CFN_INIT_CMD set runs that program instead,
// exactly as upstream.

const INIT_KEY = 'AWS::CloudFormation::Init';
const DEFAULT_FETCH_TIMEOUT_SECONDS = 60;

/** Unset, the hook applies the metadata itself: nothing to install. */
const CFN_INIT: ToolDeclaration = {
  name: 'cfn-init',
  variable: 'HEAT_CFN_INIT_CMD',
  defaults: [],
  install: 'Install heat-cfntools, or unset HEAT_CFN_INIT_CMD to use the built-in interpreter.',
};

export const declaration: HookDeclaration = { group: 'cfn-init', tool: CFN_INIT };

export const hook: BuiltinHook = {
  group: declaration.group,
  acceptsNoId: true,

  // The metadata file is shared by every cfn-init deployment (and cfn-hup): nothing of one deployment to remove.
  workFiles: () => [],

  async run(deployment, ctx) {
    const { log, env } = ctx;
    let init: unknown = deployment.config ?? {};
    if (typeof init === 'string') {
      try {
        init = JSON.parse(init) as unknown;
      } catch (err) {
        throw new HookFailure(
          `cfn-init: the config is text but not JSON (${errorMessage(err)}): give the AWS::CloudFormation::Init section`,
        );
      }
    }
    const dir = pathSetting(env, 'HEAT_CFN_INIT_LAST_METADATA_DIR', '/var/cache/heat-cfntools');
    await prepareDir(dir);
    const metadataFile = path.join(dir, 'last_metadata');
    await writeFileAtomic(metadataFile, JSON.stringify({ [INIT_KEY]: init }), { mode: 0o600 });
    log.info('metadata written', { file: metadataFile });

    const command = (await chooseTool(CFN_INIT, env, spawnProbe(ctx)))?.file;
    if (command !== undefined) {
      const run = await runTool(ctx, { file: command, args: [], env }, notInstalled(env, CFN_INIT, command));
      if (run.status === 0) log.info('cfn-init completed', { command });
      else log.error('cfn-init failed', { command, status: run.status });
      return result(run);
    }
    return runNative(init, ctx);
  },
};

async function runNative(init: unknown, ctx: HookContext) {
  const run = initRun(ctx);
  try {
    await runConfigs(run, parseInit(init));
  } catch (err) {
    const message = err instanceof HookFailure ? err.message : `cfn-init: ${errorMessage(err)}`;
    ctx.log.error('cfn-init failed', { reason: message });
    return result({ stdout: run.stdout.join(''), stderr: `${run.stderr.join('')}${message}\n`, status: 1 });
  }
  ctx.log.info('cfn-init completed');
  return result({ stdout: run.stdout.join(''), stderr: run.stderr.join(''), status: 0 });
}

function initRun(ctx: HookContext): InitRun {
  const timeout = Number(ctx.env.HEAT_CFN_INIT_FETCH_TIMEOUT);
  const seconds = Number.isFinite(timeout) && timeout > 0 ? timeout : DEFAULT_FETCH_TIMEOUT_SECONDS;
  return createInitRun(ctx, ctx.env[ROOT_ENV] ?? '', seconds);
}
