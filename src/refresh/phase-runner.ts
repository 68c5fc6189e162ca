import { promises as fs } from 'node:fs';
import path from 'node:path';
import { errorMessage } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { TrustCheck, UntrustedPathError } from '../util/trust.js';
import { environmentFiles, EnvironmentSourceError, sourceEnvironment } from './environment-d.js';
import { PhaseFailedError } from './refresh-errors.js';
import { compareRunParts, selectRunParts } from './run-parts-selection.js';
import { runScript } from './run-script.js';

// One phase directory, as `dib-run-parts <dir>` runs it: source environment.d, then run the selected scripts in
// order, stopping at the first failure. In-process steps (the agent's own apply and deploy) take their place in that
// order by name, and replace a file of the same name. The scripts run as root and the environment.d files are sourced
// by bash as root: when the phase directory, a script or an environment.d file breaks the trust rule
// (util/trust.ts), nothing of the phase runs and it fails with ERR_UNTRUSTED_PATH (upstream ran them regardless).

export const PHASES = ['pre-configure', 'configure', 'post-configure', 'migration'] as const;
export type PhaseName = (typeof PHASES)[number];

export interface InProcessStep {
  readonly phase: PhaseName;
  readonly name: string;
  run(env: Readonly<Record<string, string>>, signal: AbortSignal): Promise<void>;
}

export interface RunPhaseOptions {
  /** Phase name for logs and errors ('error' for error.d). */
  readonly phase: string;
  readonly dir: string;
  /** `<base>/environment.d`. */
  readonly envDir: string;
  readonly env: Readonly<Record<string, string>>;
  readonly filter: (name: string) => boolean;
  readonly steps?: readonly InProcessStep[];
  /** On the monotonic clock (performance.now(): a step of the wall clock neither cuts it short nor stretches it); past it the running script's group is killed and the phase fails. */
  readonly deadline?: number;
  readonly signal: AbortSignal;
  readonly log: Logger;
  /** Where scripts' output goes (default: the agent's stderr). */
  readonly output?: number | 'ignore';
}

type Entry = { kind: 'script'; name: string } | { kind: 'step'; name: string; step: InProcessStep };

async function statKind(p: string): Promise<'dir' | 'other' | 'missing'> {
  try {
    return (await fs.stat(p)).isDirectory() ? 'dir' : 'other';
  } catch (err) {
    // Upstream's existence test follows symlinks: a dangling link counts as missing.
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'missing' : 'other';
  }
}

async function exists(p: string): Promise<boolean> {
  try {
    await fs.lstat(p);
    return true;
  } catch {
    return false;
  }
}

/**
 * Runs the phase. Resolves false when the directory is missing and there are no steps (nothing ran), true when
 * everything succeeded; rejects with PhaseFailedError otherwise.
 */
export async function runPhase(options: RunPhaseOptions): Promise<boolean> {
  const { phase, dir, log } = options;
  const steps = options.steps ?? [];
  const kind = await statKind(dir);
  if (kind === 'missing' && steps.length === 0) {
    log.debug({ phase, dir }, 'no directory for phase');
    return false;
  }
  if (kind === 'other') {
    throw new PhaseFailedError(
      `phase ${phase}: ${dir} exists but is not a readable directory; remove it or make it one`,
      { phase },
    );
  }
  log.info({ phase }, 'starting phase');
  const entries = await phaseEntries(options, steps, kind === 'dir');

  const fail: Fail = (message, details, cause) => {
    throw new PhaseFailedError(
      `phase ${phase}: ${message}`,
      { phase, ...details },
      cause === undefined ? undefined : { cause },
    );
  };

  const files = await environmentFiles(options.envDir);
  const scripts = entries.flatMap((e) => (e.kind === 'script' ? [path.join(dir, e.name)] : []));
  refuseUntrusted(phase, [...(kind === 'dir' ? [dir] : []), ...files, ...scripts]);

  let env: Record<string, string>;
  try {
    env = await sourceEnvironment(files, options.env, {
      signal: options.signal,
      ...(options.output !== undefined ? { stderr: options.output } : {}),
    });
  } catch (err) {
    if (options.signal.aborted)
      fail('interrupted while sourcing environment.d', { script: 'environment.d', aborted: true });
    const e = err as EnvironmentSourceError;
    fail(
      errorMessage(err),
      { script: 'environment.d', scriptExitCode: e.exitCode ?? null, scriptSignal: e.signal ?? null },
      err,
    );
  }

  for (const entry of entries) {
    if (options.signal.aborted) fail(`interrupted before ${entry.name}`, { script: entry.name, aborted: true });
    if (options.deadline !== undefined && performance.now() >= options.deadline)
      fail(`timed out before ${entry.name}`, { script: entry.name, timedOut: true });
    if (entry.kind === 'step') await runStep(entry.step, env, options, fail);
    else await runFile(entry.name, env, options, fail);
  }
  log.info({ phase }, 'completed phase');
  return true;
}

/** The phase's scripts and in-process steps in run-parts order; a step replaces the script of its name. */
async function phaseEntries(
  options: RunPhaseOptions,
  steps: readonly InProcessStep[],
  isDir: boolean,
): Promise<Entry[]> {
  const { phase, dir, log } = options;
  const stepNames = new Set(steps.map((s) => s.name));
  const entries: Entry[] = [];
  for (const name of isDir ? await selectRunParts(dir, options.filter) : [])
    if (!stepNames.has(name)) entries.push({ kind: 'script', name });
  for (const step of steps) {
    const shadowed = path.join(dir, step.name);
    if (isDir && (await exists(shadowed)))
      log.info({ phase, script: step.name, file: shadowed }, 'in-process step replaces script');
    entries.push({ kind: 'step', name: step.name, step });
  }
  return entries.sort((a, b) => compareRunParts(a.name, b.name));
}

/** Refuses the phase when its directory, an environment.d file or a script it would run breaks the trust rule. */
function refuseUntrusted(phase: string, paths: readonly string[]): void {
  const trust = new TrustCheck();
  for (const p of paths) {
    const verdict = trust.judge(p);
    if (verdict.kind !== 'untrusted') continue;
    const err = new UntrustedPathError(p, verdict.at, verdict.problem);
    throw new PhaseFailedError(
      `phase ${phase}: ${err.message}; nothing of the phase ran`,
      { phase, script: path.basename(p) },
      { cause: err, code: 'ERR_UNTRUSTED_PATH' },
    );
  }
}

type Fail = (
  message: string,
  details: Omit<ConstructorParameters<typeof PhaseFailedError>[1], 'phase'>,
  cause?: unknown,
) => never;

async function runFile(name: string, env: Record<string, string>, options: RunPhaseOptions, fail: Fail): Promise<void> {
  const file = path.join(options.dir, name);
  const result = await runScript({
    file,
    env,
    signal: options.signal,
    ...(options.deadline !== undefined ? { deadline: options.deadline } : {}),
    ...(options.output !== undefined ? { output: options.output } : {}),
  });
  const exitCode = result.exitCode ?? (result.signal !== null ? 128 : 127);
  options.log.info(
    {
      phase: options.phase,
      script: name,
      exitCode: result.exitCode,
      killedBy: result.signal ?? undefined,
      durationMs: Math.round(result.seconds * 1000),
    },
    'script finished',
  );
  if (result.exitCode === 0) return;
  const details = {
    script: name,
    scriptExitCode: result.exitCode,
    scriptSignal: result.signal,
    timedOut: result.timedOut,
    aborted: result.aborted,
  };
  if (result.timedOut) fail(`${file} was killed by the timeout`, details);
  if (result.aborted) fail(`${file} was stopped by shutdown`, details);
  if (result.spawnError !== undefined)
    fail(`${file} could not be started (${result.spawnError}); check its #! line and permissions`, details);
  if (result.signal !== null) fail(`${file} was killed by ${result.signal}`, details);
  fail(`${file} exited with status ${exitCode}`, details);
}

async function runStep(
  step: InProcessStep,
  env: Record<string, string>,
  options: RunPhaseOptions,
  fail: Fail,
): Promise<void> {
  const controller = new AbortController();
  let timedOut = false;
  const onAbort = () => controller.abort(options.signal.reason);
  options.signal.addEventListener('abort', onAbort, { once: true });
  const timer =
    options.deadline === undefined
      ? undefined
      : setTimeout(
          () => {
            timedOut = true;
            controller.abort(new Error('refresh timeout reached'));
          },
          Math.max(0, options.deadline - performance.now()),
        );
  const started = process.hrtime.bigint();
  let error: unknown;
  try {
    await step.run(env, controller.signal);
  } catch (err) {
    error = err;
  } finally {
    if (timer) clearTimeout(timer);
    options.signal.removeEventListener('abort', onAbort);
  }
  const durationMs = Math.round(Number(process.hrtime.bigint() - started) / 1e6);
  const failed = error !== undefined || timedOut || options.signal.aborted;
  options.log.info(
    { phase: options.phase, script: step.name, inProcess: true, exitCode: failed ? 1 : 0, durationMs },
    'script finished',
  );
  if (!failed) return;
  const details = { script: step.name, scriptExitCode: 1, timedOut, aborted: options.signal.aborted };
  if (timedOut) fail(`in-process step ${step.name} was stopped by the timeout`, details, error);
  if (options.signal.aborted) fail(`in-process step ${step.name} was stopped by shutdown`, details, error);
  fail(`in-process step ${step.name} failed: ${errorMessage(error)}`, details, error);
}
