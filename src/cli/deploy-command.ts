import path from 'node:path';
import type { Command } from 'commander';
import { loadConfig, type LoadedConfig } from '../config/load.js';
import { logProblems } from '../config/log-problems.js';
import { DeploymentRecordError, UnknownDeploymentError } from '../state/errors.js';
import {
  forgetDeployment,
  rerunDeployment,
  runDeploymentsByHand,
  settleAppliedDeployments,
  type DeployContext,
} from '../deploy/dispatch.js';
import {
  deploymentsFrom,
  readCachedMetadata,
  readHeatConfigFile,
  writeHeatConfigFile,
} from '../deploy/deployments-input.js';
import { createLogger, type Logger } from '../log/logger.js';
import type { CommandContext } from './command-context.js';
import { oneAttemptHttpClient } from './command-http.js';
import {
  addCommonFlags,
  commonFlagsOf,
  configureLogger,
  configSources,
  COMMON_HEADING,
  type CommonFlags,
} from './common-flags.js';
import { addConfigOptions, readConfigOverrides } from './config-options.js';
import { addExitStatus } from './help-notes.js';
import { installSignalHandlers } from './process-signals.js';

// `os-config-agent deploy`: one pass of the deployment runner (upstream: configure.d/55-heat-config) over the
// deployments of the cached metadata, or of a heat-config file given with --heat-config. Runs pending hooks, signals,
// records removals, then signals the os-apply-config deployments (their data is applied before this step). Exits 1 when a deployment failed, a local write failed or the pass was interrupted. Logs go to
// stderr. Like --rerun and --forget, the pass waits up to a minute for a pass of the daemon to end; the daemon's
// re-runs of finished deployments (reconverge intervals) stop at once to let it in.
// --rerun ID runs one deployment of the metadata again and signals again; --forget ID deletes what the agent keeps of
// one (upstream's "remove the deployed file"), so the next pass runs it as new. Both refuse a deployment whose hook
// is running (exit 1), and exit 2 for an id the agent does not know.

interface DeployFlags extends CommonFlags {
  heatConfig?: string;
  rerun?: string;
  forget?: string;
}

export function defineDeployCommand(cmd: Command, ctx: CommandContext): Command {
  const setExit = ctx.setExit;
  cmd.option(
    '--heat-config <file>',
    'read the deployments from this heat-config file (a JSON list) instead of the cached metadata',
  );
  cmd.option(
    '--rerun <id>',
    'run this deployment of the metadata again and signal again, whatever its state (not while it runs)',
  );
  cmd.option('--forget <id>', 'delete the record and deployed files of this deployment: the next pass runs it as new');
  addCommonFlags(cmd, COMMON_HEADING);
  // What a pass reads: the cached metadata, the agent's state and HTTP settings, the deploy section, and whether
  // Zaqar signals go over websockets.
  const bindings = addConfigOptions(cmd, {
    scope: { DEFAULT: ['cachedir'], agent: 'all', deploy: 'all', zaqar: ['use_websockets'] },
    helpAll: ctx.helpAll,
  });
  addExitStatus(cmd, [
    'Exit status: 0 every deployment done, 1 a deployment failed or the pass was',
    'interrupted, 2 an unknown id or a usage error. Details: deployments.md.',
  ]);
  cmd.action(async () => {
    const flags = commonFlagsOf<DeployFlags>(cmd);
    if (flags.rerun !== undefined && flags.forget !== undefined)
      cmd.error('--rerun and --forget cannot be used together');
    const log = createLogger({ level: flags.debug ? 'debug' : (flags.logLevel ?? 'info'), destination: 'stderr' });
    const loaded = await loadConfig(configSources(flags, readConfigOverrides(cmd, bindings)));
    logProblems(loaded, log);
    configureLogger(log, flags, loaded.config.agent);
    // Signals get one attempt each here; the outbox keeps the rest for the daemon or the next `deploy`.
    const http = oneAttemptHttpClient(loaded, log);
    const handlers = installSignalHandlers(log);
    const context = (deployments: unknown[] | undefined) => ({
      config: loaded.config,
      paths: loaded.paths,
      log: log.child({ component: 'deploy' }),
      http,
      signal: handlers.signal,
      deployments,
    });
    try {
      if (flags.forget !== undefined) await forgetDeployment(context(undefined), flags.forget);
      else setExit(await deployPass(context(await deploymentsInput(flags, loaded, log)), flags.rerun));
    } catch (err) {
      if (!(err instanceof UnknownDeploymentError) && !(err instanceof DeploymentRecordError)) throw err;
      process.stderr.write(`os-config-agent: ${err.message} [${err.code}]\n`);
      setExit(2);
    } finally {
      handlers.dispose();
    }
  });
  return cmd;
}

/** The deployments of --heat-config FILE, else of the cached metadata (written as heat-config for upstream's tools). */
async function deploymentsInput(flags: DeployFlags, loaded: LoadedConfig, log: Logger): Promise<unknown[] | undefined> {
  const { config, paths } = loaded;
  if (flags.heatConfig !== undefined)
    return readHeatConfigFile(
      paths.map(path.resolve(flags.heatConfig)),
      flags.heatConfig,
      config.agent.max_source_bytes,
    );
  const deployments = deploymentsFrom(await readCachedMetadata(config, paths, log), log);
  if (deployments !== undefined) await writeHeatConfigFile(config, deployments);
  return deployments;
}

/** A pass (or --rerun of one deployment), then the os-apply-config deployments signalled; the exit status. */
async function deployPass(ctx: DeployContext, rerunId: string | undefined): Promise<number> {
  if (rerunId !== undefined) {
    const rerun = await rerunDeployment(ctx, rerunId);
    // An os-apply-config deployment waits for the end of the cycle; this command is that end, as for a pass.
    const settled =
      rerun.record.state === 'applied' ? await settleAppliedDeployments(ctx, { ok: true }) : { failed: [] };
    return rerun.failed || rerun.interrupted || settled.failed.length > 0 ? 1 : 0;
  }
  const report = await runDeploymentsByHand(ctx);
  // As 55-heat-config, this pass follows the apply (20-os-apply-config): os-apply-config deployments are signalled at
  // its end rather than waiting for a daemon cycle that may not come.
  const settled = report.interrupted ? { failed: [] } : await settleAppliedDeployments(ctx, { ok: true });
  // A held deployment (its record cannot be used) is not done: exit 1, as for a failure; the log says why.
  return report.failed.length > 0 || report.held.length > 0 || settled.failed.length > 0 || report.interrupted ? 1 : 0;
}
