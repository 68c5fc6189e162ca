import type { ConfigSources } from '../config/load.js';
import { Agent } from '../daemon/agent.js';
import type { AgentMode } from '../daemon/agent-deps.js';
import { createNativePipeline } from '../daemon/native-pipeline.js';
import { createLazyHttpClient } from '../http/lazy-client.js';
import type { HttpClient } from '../http/types.js';
import type { Logger } from '../log/logger.js';
import type { LoadedConfig } from '../config/load.js';
import { selfConfigHook } from '../self-config/self-config-hook.js';
import { createServiceNotifier } from '../daemon/service-notifier.js';
import { runningBundle } from '../daemon/self-upgrade.js';
import { agentHttpOptions } from './command-http.js';

// The one place where the agent's parts are put together for the command line.
export function buildAgent(sources: ConfigSources, log: Logger, mode: AgentMode, strictExit: boolean): Promise<Agent> {
  const httpFor = (loaded: LoadedConfig): HttpClient => createLazyHttpClient(agentHttpOptions(loaded, log));
  return Agent.create({
    sources,
    log,
    mode,
    strictExit,
    // Only when systemd started the agent with Type=notify (NOTIFY_SOCKET set); nothing otherwise.
    ...withService(createServiceNotifier(log)),
    // The daemon loop notices an upgrade of the agent's own files by this one (absent when run from sources).
    ...withEntryFile(runningBundle(process.argv[1])),
    env: process.env,
    // In `run`, Heat's os-collect-config metadata reconfigures the agent in the same cycle. `collect` keeps
    // upstream's division of labour: there the command (os-refresh-config -> os-apply-config) writes the file.
    afterCollect: mode === 'run' ? [selfConfigHook] : [],
    createHttp: httpFor,
    nativePipeline: (loaded, plog) => createNativePipeline(loaded, plog, httpFor(loaded)),
    // The deployment code is loaded on first use, so `collect` never parses it.
    // Signals queued by `cfn-signal`: loaded only when the daemon loops.
    signalQueue: async (ctx, signal) => (await import('../daemon/signal-queue-service.js')).runSignalQueue(ctx, signal),
    // cfn-hup's hooks, once /etc/cfn/cfn-hup.conf exists (its code loads only then).
    cfnHup: async (ctx, signal) => (await import('../daemon/cfn-hup-service.js')).runCfnHup(ctx, signal),
    resumeAfterBoot: async (loaded, rlog) => (await import('../deploy/reboot.js')).deploymentsAwaitBoot(loaded, rlog),
    backgroundPass: async (loaded, blog, http, signal) =>
      (await import('../deploy/deploy-step.js')).flushOutbox(loaded, blog, http, { signal }),
    reconverge: async (loaded, rlog, http, signal) =>
      (await import('../deploy/reconverge/step.js')).reconvergeDue(loaded, rlog, http, signal),
  });
}

function withService(service: ReturnType<typeof createServiceNotifier>) {
  return service ? { service } : {};
}

function withEntryFile(file: string | undefined) {
  return file === undefined ? {} : { entryFile: file };
}
