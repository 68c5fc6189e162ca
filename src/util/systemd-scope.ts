import { existsSync } from 'node:fs';

// Per-deployment resource limits: a deployment's tool runs inside a transient systemd scope, a cgroup of its own with
// MemoryMax=, CPUQuota= and TasksMax=, so a runaway deployment is held (or OOM-killed inside its scope) without taking
// the agent or the machine with it. `systemd-run --scope` asks systemd for the scope and then executes the tool in its
// own place: the pid (and process group) the agent records and kills is the tool's.

export interface HookLimits {
  /** Bytes, or a value systemd reads (512M, 2G, 80%); empty: no limit. */
  readonly memoryMax: string;
  /** Percent of one CPU (50%, 200%); empty: no limit. */
  readonly cpuQuota: string;
  /** Number of tasks (processes and threads); 0: no limit. */
  readonly tasksMax: number;
}

/** The unit properties for the limits that are set: empty when none is. */
export function scopeProperties(limits: HookLimits): string[] {
  const props: string[] = [];
  if (limits.memoryMax.trim() !== '') props.push(`MemoryMax=${limits.memoryMax.trim()}`);
  if (limits.cpuQuota.trim() !== '') props.push(`CPUQuota=${limits.cpuQuota.trim()}`);
  if (limits.tasksMax > 0) props.push(`TasksMax=${limits.tasksMax}`);
  return props;
}

/** The systemd-run command line that runs `file args` in a transient scope with the given properties. */
export function scopeCommand(
  file: string,
  args: readonly string[],
  properties: readonly string[],
): { file: string; args: string[] } {
  // --collect: a scope whose tool failed is unloaded too, not left behind as a failed unit.
  return {
    file: 'systemd-run',
    args: ['--scope', '--quiet', '--collect', ...properties.flatMap((p) => ['-p', p]), '--', file, ...args],
  };
}

/** sd_booted(): systemd is the init system (it creates this directory at boot, nothing else does). */
export function systemdIsInit(runDir = '/run/systemd/system'): boolean {
  return existsSync(runDir);
}
