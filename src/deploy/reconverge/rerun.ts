import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { secretInputTexts, type Deployment } from '../../heat/deployment.js';
import { bodyFromHookResult, failureBody, STATUS_NO_HOOK, STATUS_NOT_EXECUTABLE } from '../../heat/signal-body.js';
import { RECONVERGE_ENV } from '../../hooks/kit/change-report.js';
import { findHook, hookDirs } from '../../hooks/locate.js';
import { releaseSecrets, setSecrets } from '../../log/redact.js';
import { watchWishes } from '../../state/lock-wish.js';
import { stateError } from '../../state/errors.js';
import { writeStateFile } from '../../state/state-file.js';
import { deployLockFile, type DeploymentRecord, type ReconvergeResult } from '../../state/store.js';
import type { JsonObject } from '../../util/json-merge.js';
import { deploymentLog, hookEnv, type DeployDeps } from '../context.js';
import { invokeHook, logHookResult } from '../hook-run.js';
import { holdOutputSecrets } from '../output-secrets.js';
import { REBOOT_EXIT_CODE } from '../reboot.js';
import type { Candidate } from './candidates.js';
import { verdictOfRerun, type RerunVerdict } from './outcome.js';

// One re-run of a finished deployment: the record `reconverging` (a start counted, the state it returns to kept), the
// hook with the inputs it last had, in a process group of its own and with its timeout, as any run; then the outcome
// on the record, the output in <state_dir>/reconverge/<id>.json, and one log line. Never a signal: no signal event
// goes with a re-run's moves, so the store would refuse a write that queued one. A shutdown, a cycle with new data or
// an operator's command waiting for the deploy lock stops it: its processes are ended and the record goes back with
// no outcome.

/** The logger's owner of the secret inputs of the deployment being re-run (its deployment may not be listed yet). */
const RERUN_SECRETS_OWNER = 'reconverge';
/** Characters of stdout and of stderr kept in the re-run's output file (the end: where tools say what happened). */
const OUTPUT_TAIL_CHARS = 16_000;

export interface RerunDone {
  readonly record: DeploymentRecord;
  /** finished: an outcome is on the record; stopped: it went back without one. */
  readonly end: 'finished' | 'stopped';
}

export async function rerunOne(deps: DeployDeps, c: Candidate, stop: AbortSignal): Promise<RerunDone> {
  const { store } = deps;
  const d = c.deployment;
  const prior = c.record.reconverge ?? { runs: 0 };
  const startedAt = store.timestamp();
  const started = await store.transition(c.record, 'reconverge-started', {
    hookPid: undefined,
    hookPidStart: undefined,
    reconverge: { ...prior, runs: prior.runs + 1, from: c.record.state, startedAt },
  });
  // Stopped by the caller (shutdown, a cycle with new data) or by a process waiting for the deploy lock.
  const yielded = new AbortController();
  const onStop = () => yielded.abort();
  if (stop.aborted) yielded.abort();
  else stop.addEventListener('abort', onStop, { once: true });
  const unwatch = watchWishes(deployLockFile(deps.ctx.config), () => yielded.abort());
  setSecrets(RERUN_SECRETS_OWNER, secretInputTexts(d));
  try {
    const ran = await runHook(deps, d, started, yielded.signal);
    if (ran === 'stopped') return { record: await stopped(deps, started), end: 'stopped' };
    return { record: await finished(deps, started, ran, startedAt, c.intervalSeconds), end: 'finished' };
  } finally {
    unwatch();
    stop.removeEventListener('abort', onStop);
    releaseSecrets(RERUN_SECRETS_OWNER);
  }
}

interface Ran {
  readonly body: JsonObject;
  readonly exitCode: number | null;
  readonly verdict: RerunVerdict;
}

/** The hook for the deployment's group, run as the first run was; its result, or 'stopped'. */
async function runHook(
  deps: DeployDeps,
  d: Deployment,
  record: DeploymentRecord,
  signal: AbortSignal,
): Promise<Ran | 'stopped'> {
  const { config, paths } = deps.ctx;
  const lookup = await findHook(d.group, hookDirs(config, paths, deps.ctx.env ?? process.env));
  if (!lookup.found || !lookup.found.runnable) {
    const message = lookup.found
      ? `hook ${paths.unmap(lookup.found.path)} ${lookup.found.problem ?? 'cannot be run'}`
      : `no hook for group "${d.group}" (looked for "${lookup.name}")`;
    const body = failureBody(message, lookup.found ? STATUS_NOT_EXECUTABLE : STATUS_NO_HOOK);
    return { body, exitCode: null, verdict: { outcome: 'failed', reason: message } };
  }
  const shown = paths.unmap(lookup.found.path);
  const timeoutSeconds = d.hookTimeoutSeconds ?? config.deploy.hook_timeout;
  const env = { ...hookEnv(deps.ctx), [RECONVERGE_ENV]: '1' };
  const { result, inProcess } = await invokeHook(deps, d, record, {
    file: lookup.found.path,
    name: lookup.name,
    env,
    timeoutSeconds,
    signal,
  });
  const body = bodyFromHookResult(result, shown, timeoutSeconds);
  holdOutputSecrets(d.id, body);
  logHookResult(deploymentLog(deps.ctx, d), shown, result, inProcess, 'debug');
  if (result.aborted) return 'stopped';
  const verdict =
    !result.timedOut && Number(body.deploy_status_code) === REBOOT_EXIT_CODE
      ? { outcome: 'failed' as const, statusCode: String(REBOOT_EXIT_CODE), reason: REBOOT_REFUSED }
      : verdictOfRerun(body, d.outputs);
  return { body, exitCode: result.exitCode, verdict };
}

const REBOOT_REFUSED =
  'the hook asked for a reboot (exit 194) in a re-run; re-runs never reboot the machine: reboot it, or run `os-config-agent deploy --rerun` for a run that may';

/** Back to the state it started from, with no outcome: the last one stays, and the next is due an interval on. */
async function stopped(deps: DeployDeps, record: DeploymentRecord): Promise<DeploymentRecord> {
  const { from: _from, ...reconverge } = record.reconverge ?? { runs: 1 };
  const back = await deps.store.transition(record, 'reconverge-stopped', {
    reconverge: { ...reconverge, endedAt: deps.store.timestamp() },
  });
  deploymentLog(deps.ctx, record).info(
    { group: record.group, reconvergeRuns: reconverge.runs },
    'deployment re-run stopped; it runs again at its next interval',
  );
  return back;
}

/** The outcome on the record (and the output beside it), then the re-run's one line. */
async function finished(
  deps: DeployDeps,
  record: DeploymentRecord,
  ran: Ran,
  startedAt: string,
  intervalSeconds: number,
): Promise<DeploymentRecord> {
  const { store } = deps;
  const endedAt = store.timestamp();
  const { verdict } = ran;
  const last: ReconvergeResult = { startedAt, endedAt, exitCode: ran.exitCode, ...verdict };
  await writeOutput(deps, record.id, last, ran.body);
  const { from: _from, ...reconverge } = record.reconverge ?? { runs: 1 };
  const done = await store.transition(record, 'reconverge-finished', {
    reconverge: { ...reconverge, endedAt, last },
  });
  const fields = {
    group: record.group,
    outcome: verdict.outcome,
    exitCode: ran.exitCode,
    ...(verdict.statusCode !== undefined ? { statusCode: verdict.statusCode } : {}),
    ...(verdict.changes !== undefined ? { changes: verdict.changes } : {}),
    durationMs: Date.parse(endedAt) - Date.parse(startedAt),
    reconvergeRuns: reconverge.runs,
    intervalSeconds,
  };
  const dlog = deploymentLog(deps.ctx, record);
  if (verdict.outcome === 'failed')
    dlog.error({ ...fields, code: 'ERR_HOOK', reason: verdict.reason }, 'deployment re-run');
  else if (verdict.outcome === 'changed') dlog.warn(fields, 'deployment re-run');
  else dlog.info(fields, 'deployment re-run');
  return done;
}

/** <state_dir>/reconverge/<id>.json: the re-run's outcome and the ends of its output, for `status <id>`. */
async function writeOutput(deps: DeployDeps, id: string, last: ReconvergeResult, body: JsonObject): Promise<void> {
  const file = deps.store.reconvergePath(id);
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 }).catch((err: unknown) => {
    throw stateError('create the directory', path.dirname(file), err);
  });
  const tail = (v: unknown) => (typeof v === 'string' ? v.slice(-OUTPUT_TAIL_CHARS) : '');
  const output = { version: 1, id, ...last, stdout: tail(body.deploy_stdout), stderr: tail(body.deploy_stderr) };
  await writeStateFile(file, `${JSON.stringify(output, null, 2)}\n`);
}
