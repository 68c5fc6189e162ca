import { HookLog } from '../../../src/hooks/kit/hook-log.js';
import type { HookContext } from '../../../src/hooks/contract.js';
import type { DeploymentInput } from '../../../src/heat/deployment.js';
import { runProcess } from '../../../src/util/process-group.js';
import { SYSTEM_PATH } from '../hook-process.js';

// A HookContext for driving the chef hook's source modules directly: tools run as the agent runs them (their own
// process group, bounded), and every log line is kept (masked as the hook masks it) for the test to read.

export interface TestContext extends HookContext {
  /** Every log line so far. */
  logText(): string;
}

export function hookContext(env: Record<string, string> = {}, secrets: readonly DeploymentInput[] = []): TestContext {
  const log = new HookLog('heat-config-chef', () => undefined);
  log.addSecrets(secrets);
  return {
    env: { PATH: SYSTEM_PATH, ...env },
    log,
    signal: new AbortController().signal,
    spawn: (run) => runProcess({ ...run, ownGroup: true, timeoutMs: 60_000 }),
    logText: () => log.text(),
  };
}
