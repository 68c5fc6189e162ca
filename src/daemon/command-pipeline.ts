import { constants } from 'node:os';
import { CommandFailedError } from '../errors.js';
import { runProcess } from '../util/process-group.js';
import type { Pipeline, PipelineContext } from './pipeline.js';

// Upstream behaviour: the configured `command` runs through /bin/sh -c (existing configs use shell syntax such as
// `os-refresh-config --timeout 600`), with the inherited environment plus OS_CONFIG_FILES, stdio inherited.
// On shutdown the command's process group gets SIGTERM (SIGKILL 5 s later if it is still there) and the cycle ends
// uncommitted.

export function createCommandPipeline(command: string, options: { stdio?: 'inherit' | 'ignore' } = {}): Pipeline {
  return {
    name: 'command',
    run: (ctx) => runCommand(command, ctx, options.stdio ?? 'inherit'),
  };
}

async function runCommand(command: string, ctx: PipelineContext, stdio: 'inherit' | 'ignore'): Promise<void> {
  ctx.log.info({ command, files: ctx.configFiles.length }, 'running command');
  // Born with the neutral oom_score_adj, not the agent's -500 (process-group.ts): everything the command runs
  // (os-refresh-config, its phase scripts, the hooks) inherits it (docs/systemd.md). Its own process group, which
  // shutdown terminates whole.
  const result = await runProcess({
    file: '/bin/sh',
    args: ['-c', command],
    env: { ...process.env, OS_CONFIG_FILES: ctx.configFiles.join(':') },
    // The agent logs JSON on stdout; the command's own output goes to stderr when stdout carries data.
    stdout: stdio,
    stderr: stdio,
    signal: ctx.signal,
  });
  if (result.spawnError !== undefined)
    throw new CommandFailedError(`command could not be started: ${result.spawnError.message}`, 1);
  const { exitCode: code, signal } = result;
  if (code === 0) {
    ctx.log.info({ command, durationMs: result.durationMs }, 'command succeeded');
    return;
  }
  // Upstream exits with the command's code, or 256-N for a command killed by signal N.
  const exitCode = code ?? 256 - (signal ? (constants.signals[signal as NodeJS.Signals] ?? 1) : 1);
  throw new CommandFailedError(
    signal
      ? `command was killed by ${signal}; new data not committed, retrying next cycle`
      : `command exited with status ${code}; new data not committed, retrying next cycle`,
    exitCode,
  );
}
