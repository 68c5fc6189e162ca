import path from 'node:path';
import { HookFailure, type HookContext } from '../contract.js';
import type { ToolDeclaration } from '../declaration.js';
import { chooseTool, spawnProbe, type ToolChoice } from './choose-tool.js';
import { notInstalled, runTool, type ToolOutcome } from './run-tool.js';

// The container CLI the docker hooks drive, each as its own declaration says: HEAT_DOCKER_CMD when set (upstream's
// variable), else its defaults (docker-cmd's: `docker`, or `podman`, same command line, on a server that has podman
// and no docker). Its daemon is whatever the environment names (DOCKER_HOST, CONTAINER_HOST), as for any docker
// command.

/** The service the docker CLI talks to. */
export const DOCKER_DAEMON = 'the docker daemon, or the one DOCKER_HOST names';

/** docker-cmd's CLI, which docker-compose's `docker compose` goes through too. */
export const CONTAINER_CLI: ToolDeclaration = {
  name: 'docker',
  variable: 'HEAT_DOCKER_CMD',
  defaults: ['docker', 'podman'],
  install: 'Install docker.io (Debian, Ubuntu), docker-ce or podman.',
  daemon: `${DOCKER_DAEMON} (podman needs none)`,
};

/** Says in the log when a later default (podman) stands in for docker. */
export function logStandIn(ctx: HookContext, choice: ToolChoice | undefined): void {
  if (choice?.by === 'stand-in') ctx.log.info('docker not found; using podman', { command: choice.file });
}

/** The container CLI of one hook run. */
export class ContainerCli {
  private constructor(
    private readonly ctx: HookContext,
    private readonly tool: ToolDeclaration,
    /** The command started: the variable's value, the default's name, or the path of a stand-in. */
    readonly command: string,
  ) {}

  /** The CLI `tool` chooses for this run. */
  static async choose(ctx: HookContext, tool: ToolDeclaration): Promise<ContainerCli> {
    const choice = await chooseTool(tool, ctx.env, spawnProbe(ctx));
    logStandIn(ctx, choice);
    return new ContainerCli(ctx, tool, choice?.file ?? tool.name);
  }

  /** Runs `<command> <args>`, logged; a missing command fails the hook saying what to install. */
  run(args: readonly string[], cwd?: string): Promise<ToolOutcome> {
    const run = { file: this.command, args, env: this.ctx.env, ...(cwd !== undefined ? { cwd } : {}) };
    return runTool(this.ctx, run, notInstalled(this.ctx.env, this.tool, this.command));
  }

  /**
   * Asks the CLI something (images, ps) without logging the call: its output lines, or why it failed. A missing
   * command fails the hook saying what to install.
   */
  async query(args: readonly string[]): Promise<{ readonly lines: string[] } | { readonly failure: string }> {
    const res = await this.ctx.spawn({ file: this.command, args, env: this.ctx.env });
    if (res.spawnError?.code === 'ENOENT') throw new HookFailure(notInstalled(this.ctx.env, this.tool, this.command));
    if (res.spawnError) return { failure: res.spawnError.message };
    if (res.exitCode !== 0) return { failure: `status ${res.exitCode ?? res.signal}: ${res.stderr.trim()}` };
    return {
      lines: res.stdout
        .split('\n')
        .map((l) => l.trim())
        .filter((l) => l !== ''),
    };
  }
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
