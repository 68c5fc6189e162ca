import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { CommandFailedError } from '../errors.js';
import { startBornNeutral } from '../util/oom-score.js';
import type { Pipeline, PipelineContext } from './pipeline.js';

// Upstream behaviour: the configured `command` runs through /bin/sh -c (existing configs use shell syntax such as
// `os-refresh-config --timeout 600`), with the inherited environment plus OS_CONFIG_FILES, stdio inherited.
// On shutdown the command's process group gets SIGTERM and the cycle ends uncommitted.

export function createCommandPipeline(command: string, options: { stdio?: 'inherit' | 'ignore' } = {}): Pipeline {
  return {
    name: 'command',
    run: (ctx) => runCommand(command, ctx, options.stdio ?? 'inherit'),
  };
}

async function runCommand(command: string, ctx: PipelineContext, stdio: 'inherit' | 'ignore'): Promise<void> {
  const env = { ...process.env, OS_CONFIG_FILES: ctx.configFiles.join(':') };
  ctx.log.info({ command, files: ctx.configFiles.length }, 'running command');
  const started = Date.now();
  // Born with the neutral oom_score_adj, not the agent's -500: everything the command runs (os-refresh-config, its
  // phase scripts, the hooks) inherits it (docs/systemd.md).
  const child = startBornNeutral(() =>
    spawn('/bin/sh', ['-c', command], {
      env,
      // The agent logs JSON on stdout; the command's own output goes to stderr when stdout carries data.
      stdio: stdio === 'inherit' ? ['ignore', 'inherit', 'inherit'] : 'ignore',
      detached: true,
    }),
  );
  const onAbort = () => {
    if (child.pid !== undefined) {
      try {
        process.kill(-child.pid, 'SIGTERM');
      } catch {
        // already gone
      }
    }
  };
  ctx.signal.addEventListener('abort', onAbort, { once: true });
  try {
    const { code, signal } = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>(
      (resolve, reject) => {
        child.once('error', reject);
        child.once('exit', (c, s) => resolve({ code: c, signal: s }));
      },
    );
    const durationMs = Date.now() - started;
    if (code === 0) {
      ctx.log.info({ command, durationMs }, 'command succeeded');
      return;
    }
    // Upstream exits with the command's code, or 256-N for a command killed by signal N.
    const exitCode = code ?? 256 - (signal ? (constants.signals[signal] ?? 1) : 1);
    throw new CommandFailedError(
      signal
        ? `command was killed by ${signal}; new data not committed, retrying next cycle`
        : `command exited with status ${code}; new data not committed, retrying next cycle`,
      exitCode,
    );
  } catch (err) {
    if (err instanceof CommandFailedError) throw err;
    throw new CommandFailedError(`command could not be started: ${(err as Error).message}`, 1);
  } finally {
    ctx.signal.removeEventListener('abort', onAbort);
  }
}
