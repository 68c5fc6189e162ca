import type { ConfigSources } from '../config/load.js';
import { Agent, type AgentMode } from '../daemon/agent.js';
import { createLazyHttpClient } from '../http/lazy-client.js';
import type { Logger } from '../log/logger.js';

// The one place where the agent's parts are put together for the command line.
export function buildAgent(sources: ConfigSources, log: Logger, mode: AgentMode, strictExit: boolean): Promise<Agent> {
  return Agent.create({
    sources,
    log,
    mode,
    strictExit,
    createHttp: (loaded) =>
      createLazyHttpClient({ defaultMaxBytes: loaded.config.agent.http_max_bytes, defaultRetries: loaded.config.agent.http_retries }),
  });
}
