import { stat } from 'node:fs/promises';
import type { HupDaemonState } from '../cfntools/hup-daemon.js';
import type { LoadedConfig } from '../config/load.js';
import type { HttpClient } from '../http/types.js';
import type { Logger } from '../log/logger.js';
import { RetryLoop, type RetryPassResult } from './retry-loop.js';

// The daemon's built-in cfn-hup: while /etc/cfn/cfn-hup.conf does not exist (almost every server) it costs one stat
// per polling_interval and none of cfn-hup's code is loaded; once it exists, the check `cfn-hup -f` makes runs here
// every `interval` minutes of that file, so a template needs no cron line (src/cfntools/hup-daemon.ts). A check
// that fails is logged and retried later; nothing of it stops the agent.

export interface CfnHupContext {
  /** The current configuration and HTTP client (both change on reload). */
  readonly loaded: () => LoadedConfig;
  readonly http: () => HttpClient;
  readonly log: Logger;
}

export const CFN_HUP_CONF = '/etc/cfn/cfn-hup.conf';

export async function runCfnHup(ctx: CfnHupContext, signal: AbortSignal): Promise<void> {
  const state: HupDaemonState = {};
  let announced = false;
  const pass = async (s: AbortSignal): Promise<RetryPassResult> => {
    const { config, paths } = ctx.loaded();
    const idle = { nextDueAt: Date.now() + config.DEFAULT.polling_interval * 1000 };
    if (!(await isFile(paths.map(CFN_HUP_CONF)))) return idle;
    if (!announced) ctx.log.info({ file: CFN_HUP_CONF }, 'cfn-hup configuration found; checking its hooks');
    announced = true;
    const { daemonHupCheck } = await import('../cfntools/hup-daemon.js');
    const result = await daemonHupCheck(state, {
      paths,
      env: process.env,
      http: ctx.http(),
      log: ctx.log,
      signal: s,
      configuredEndpoint: config.cfn.metadata_url,
      timeoutSeconds: config.cfn.timeout,
      caFile: config.cfn.ca_certificate,
    });
    if (result.busy) return { busy: true };
    return result.nextInMs === undefined ? idle : { nextDueAt: Date.now() + result.nextInMs };
  };
  await new RetryLoop('cfn-hup', pass, ctx.log).run(signal);
}

async function isFile(file: string): Promise<boolean> {
  try {
    return (await stat(file)).isFile();
  } catch {
    return false;
  }
}
