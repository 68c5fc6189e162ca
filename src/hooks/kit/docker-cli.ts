import path from 'node:path';
import { HookFailure, type HookContext } from '../contract.js';
import type { ToolDeclaration } from '../declaration.js';
import { chooseTool, spawnProbe, type ToolChoice } from './choose-tool.js';
import {
  DAEMON_TIMEOUT_OPTION,
  DaemonReach,
  DaemonUnreachable,
  type DaemonLink,
  type ProbeAnswer,
} from './daemon-reach.js';
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

/** The answer to a query: its output lines, or why it failed. */
export type QueryAnswer = { readonly lines: string[] } | { readonly failure: string };

/** The container CLI of one hook run, its daemon given the grace period of the deployment (kit/daemon-reach.ts). */
export class ContainerCli {
  /** The daemon as this run sees it: every call goes through it. */
  readonly daemon: DaemonReach;

  private constructor(
    private readonly ctx: HookContext,
    private readonly tool: ToolDeclaration,
    /** The command started: the variable's value, the default's name, or the path of a stand-in. */
    readonly command: string,
    graceMs: number,
  ) {
    this.daemon = new DaemonReach(dockerLink(ctx, command), graceMs);
  }

  /** The CLI `tool` chooses for this run, whose daemon gets `graceMs` to answer. */
  static async choose(ctx: HookContext, tool: ToolDeclaration, graceMs: number): Promise<ContainerCli> {
    const choice = await chooseTool(tool, ctx.env, spawnProbe(ctx));
    logStandIn(ctx, choice);
    return new ContainerCli(ctx, tool, choice?.file ?? tool.name, graceMs);
  }

  /**
   * Runs `<command> <args>`, logged, made again while a refused daemon has its grace period; a missing command fails
   * the hook saying what to install, a daemon unreachable past its grace period fails it naming the daemon.
   */
  run(args: readonly string[], what: string): Promise<ToolOutcome> {
    const missing = notInstalled(this.ctx.env, this.tool, this.command);
    return this.daemon.call(
      what,
      (signal) => runTool(this.ctx, { file: this.command, args, env: this.ctx.env, signal }, missing),
      (outcome) => (outcome.status === 0 ? '' : outcome.stderr),
    );
  }

  /**
   * Asks the CLI something (images, ps) without logging the call: its output lines, or why it failed. A missing
   * command fails the hook saying what to install; a call that hangs on an unreachable daemon fails it.
   */
  async query(args: readonly string[]): Promise<QueryAnswer> {
    const res = await this.daemon.watched(`${path.basename(this.command)} ${args[0] ?? ''}`, (signal) =>
      this.ctx.spawn({ file: this.command, args, env: this.ctx.env, signal }),
    );
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

/**
 * Docker's daemon (or podman's service) as `command` reaches it, probed with `<command> version`; failures name
 * `caller`, the program whose call failed (docker-compose, say).
 */
export function dockerLink(ctx: HookContext, command: string, caller = command): DaemonLink {
  return {
    unreachable: daemonUnreachable,
    async probe(signal): Promise<ProbeAnswer> {
      const res = await ctx.spawn({ file: command, args: ['version'], env: ctx.env, signal });
      if (res.aborted) return 'silent';
      if (res.spawnError) return 'unknown';
      return res.exitCode !== 0 && daemonUnreachable(res.stderr) ? 'refused' : 'answered';
    },
    failure: (what, stderr, note) => daemonFailure(caller, what, stderr, note),
  };
}

/**
 * True when the failure is the CLI not reaching its daemon (as opposed to an answer from the daemon): docker's and
 * podman's CLI, and docker-compose v1 (docker-py), which says so in a traceback.
 */
export function daemonUnreachable(stderr: string): boolean {
  return /Cannot connect to the Docker daemon|Is the docker daemon running|error during connect|unable to connect to Podman|Error while fetching server API version|Couldn't connect to Docker daemon/i.test(
    stderr,
  );
}

/** A HookFailure for a daemon the CLI cannot reach: the call, the cause (the CLI's words, how long), what to do. */
export function daemonFailure(command: string, what: string, stderr: string, note?: string): DaemonUnreachable {
  const cause = [stderr.trim() === '' ? undefined : lastLine(stderr), note].filter((c) => c !== undefined).join('; ');
  return new DaemonUnreachable(
    `${what}: ${path.basename(command)} cannot reach its daemon (${cause}). Start the docker service, or ` +
      `check DOCKER_HOST; the deployment option ${DAEMON_TIMEOUT_OPTION} sets how many seconds the daemon is waited for.`,
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
