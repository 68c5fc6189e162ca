import type { LoadedConfig } from '../config/load.js';
import type { HttpClient } from '../http/types.js';
import type { Logger } from '../log/logger.js';
import { scrubValue } from '../log/redact.js';
import { reportOf, type CheckResult, type DoctorReport } from './check.js';
import { recordSkew, skewCheck, type SkewSample } from './clock-skew.js';
import { configCheck } from './config-check.js';
import { diskChecks } from './disk-check.js';
import { hookChecks } from './hook-checks.js';
import { sourceChecks } from './source-checks.js';
import { trustChecks } from './trust-checks.js';

// Every check at once; the network ones each bounded by `timeoutMs`, so the whole run takes about that long at worst
// (a Keystone check and the source check after it: twice). The clock is judged from the answers the others got.

export interface DoctorInputs {
  readonly loaded: LoadedConfig;
  /** The agent's HTTP client, with the proxy settings the daemon uses. */
  readonly http: HttpClient;
  readonly log: Logger;
  /** The environment the hooks would see (their *_CMD variables, PATH). */
  readonly env: NodeJS.ProcessEnv;
  readonly timeoutMs: number;
}

export async function runDoctor(inputs: DoctorInputs): Promise<DoctorReport> {
  const samples: SkewSample[] = [];
  const http = recordSkew(inputs.http, samples);
  const network = Promise.all(
    sourceChecks({ loaded: inputs.loaded, http, log: inputs.log, timeoutMs: inputs.timeoutMs }),
  );
  const local = Promise.all([
    hookChecks(inputs.loaded, inputs.log, inputs.env, inputs.timeoutMs),
    diskChecks(inputs.loaded),
    trustChecks(inputs.loaded, inputs.env),
  ]);
  const sources = await network;
  const [hooks, disks, trust] = await local;
  const checks: CheckResult[] = [
    configCheck(inputs.loaded),
    ...sources,
    skewCheck(samples),
    ...hooks,
    ...disks,
    ...trust,
  ];
  // Causes quote error messages and configuration values: every text of every check is scrubbed once more with the
  // secrets the agent knows (the configuration's) before it is printed.
  return reportOf(checks.map(scrubValue));
}
