// Checks of text options whose value has a syntax of its own, so that a wrong one is a configuration problem when the
// file is read (the default kept) instead of a failure of every deployment later (systemd-run refusing the property).

/** systemd's MemoryMax=: bytes with an optional K, M, G, T, P or E suffix (base 1024), a percentage, or infinity. */
export function memoryMaxProblem(value: string): string | undefined {
  const v = value.trim();
  if (v === '' || /^(\d+(\.\d+)?[KMGTPE]?|\d+(\.\d+)?%|infinity)$/.test(v)) return undefined;
  return `"${value}" is not a memory limit (512M, 2G, 50%, infinity)`;
}

/** systemd's CPUQuota=: a percentage of one CPU. */
export function cpuQuotaProblem(value: string): string | undefined {
  const v = value.trim();
  if (v === '' || /^\d+(\.\d+)?%$/.test(v)) return undefined;
  return `"${value}" is not a CPU quota (50%, 200%)`;
}
