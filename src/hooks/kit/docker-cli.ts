import path from 'node:path';
import { findProgram } from './find-program.js';
import { HookFailure, type HookContext } from '../contract.js';
import { notInstalled, runTool, type ToolOutcome } from './run-tool.js';

// The container CLI the docker hooks drive: HEAT_DOCKER_CMD when set (upstream's variable), else `docker`, or
// `podman` (same command line) on a server that has podman and no docker. Its daemon is whatever the environment
// names (DOCKER_HOST, CONTAINER_HOST), as for any docker command.

const INSTALL_DOCKER = 'Install docker.io (Debian, Ubuntu), docker-ce or podman.';

/** The container command for this run; says in the log when podman stands in for docker. */
export async function containerCommand(ctx: HookContext): Promise<string> {
  const configured = ctx.env.HEAT_DOCKER_CMD;
  if (configured) return configured;
  if ((await findProgram(ctx.env, 'docker')) !== undefined) return 'docker';
  const podman = await findProgram(ctx.env, 'podman');
  if (podman === undefined) return 'docker';
  ctx.log.info('docker not found; using podman', { command: podman });
  return podman;
}

/** Runs `<command> <args>`; a missing command fails the hook saying what to install. */
export function runContainerTool(
  ctx: HookContext,
  command: string,
  args: readonly string[],
  cwd?: string,
): Promise<ToolOutcome> {
  const missing = notInstalled(ctx.env, 'docker', command, 'HEAT_DOCKER_CMD', INSTALL_DOCKER);
  return runTool(ctx, { file: command, args, env: ctx.env, ...(cwd !== undefined ? { cwd } : {}) }, missing);
}

/** True when the failure is the CLI not reaching its daemon (as opposed to an answer from the daemon). */
export function daemonUnreachable(stderr: string): boolean {
  return /Cannot connect to the Docker daemon|Is the docker daemon running|error during connect|unable to connect to Podman/i.test(
    stderr,
  );
}

/** A HookFailure for a daemon the CLI cannot reach. */
export function daemonFailure(command: string, what: string, stderr: string): HookFailure {
  return new HookFailure(
    `${what}: ${path.basename(command)} cannot reach its daemon (${lastLine(stderr)}). Start the docker service, or check DOCKER_HOST.`,
  );
}

/**
 * The line of a tool's output that says what went wrong, for an error message: the last one mentioning an error
 * (docker adds hints such as "See 'docker run --help'." after it), else the last one.
 */
export function lastLine(text: string): string {
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  return lines.findLast((l) => /error/i.test(l)) ?? lines.at(-1) ?? 'no message';
}
