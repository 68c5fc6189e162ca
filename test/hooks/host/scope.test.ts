import t from 'tap';
import type { AgentConfig } from '../../../src/config/options.js';
import { hookScopeProperties } from '../../../src/hooks/host/scope.js';
import { captureLog } from '../../helpers/log-capture.js';

// The [deploy] hook_* limits: off by default; applied only where systemd is the init system, and said once otherwise.

const config = (memoryMax: string, cpuQuota: string, tasksMax: number) =>
  ({
    deploy: { hook_memory_max: memoryMax, hook_cpu_quota: cpuQuota, hook_tasks_max: tasksMax },
  }) as unknown as AgentConfig;

t.test('no limits set: no scope, nothing logged', async (t) => {
  const cap = captureLog();
  t.equal(
    hookScopeProperties(config('', '', 0), cap.log, () => true),
    undefined,
  );
  t.equal(cap.lines.length, 0);
});

t.test('limits under systemd: the scope properties', async (t) => {
  const cap = captureLog();
  t.same(
    hookScopeProperties(config('1G', '150%', 100), cap.log, () => true),
    ['MemoryMax=1G', 'CPUQuota=150%', 'TasksMax=100'],
  );
  t.equal(cap.lines.length, 0);
});

t.test('limits without systemd: not applied, one warning for the life of the agent', async (t) => {
  const cap = captureLog();
  t.equal(
    hookScopeProperties(config('1G', '', 0), cap.log, () => false),
    undefined,
  );
  t.equal(
    hookScopeProperties(config('1G', '', 0), cap.log, () => false),
    undefined,
  );
  t.equal(cap.lines.length, 1);
  t.equal(cap.lines[0]?.msg, 'deployment limits set but systemd is not the init system; deployments run without them');
  t.same(cap.lines[0]?.limits, ['MemoryMax=1G']);
});
