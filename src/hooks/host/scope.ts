import type { AgentConfig } from '../../config/options.js';
import type { Logger } from '../../log/logger.js';
import { scopeProperties, systemdIsInit } from '../../util/systemd-scope.js';

// The [deploy] hook_* limits as the unit properties of the transient scope each deployment's processes run in. A
// scope needs systemd as the init system; without it the limits cannot be applied and the operator is told once.

let warnedNoSystemd = false;

/** The scope properties for a deployment's processes, or undefined (no limits set, or no systemd to apply them). */
export function hookScopeProperties(
  config: AgentConfig,
  log: Logger,
  isInit: () => boolean = systemdIsInit,
): readonly string[] | undefined {
  const { hook_memory_max: memoryMax, hook_cpu_quota: cpuQuota, hook_tasks_max: tasksMax } = config.deploy;
  const props = scopeProperties({ memoryMax, cpuQuota, tasksMax });
  if (props.length === 0) return undefined;
  if (!isInit()) {
    if (!warnedNoSystemd) {
      warnedNoSystemd = true;
      log.warn(
        { limits: props },
        'deployment limits set but systemd is not the init system; deployments run without them',
      );
    }
    return undefined;
  }
  return props;
}
