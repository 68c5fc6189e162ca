import path from 'node:path';
import { isJsonObject } from '../../util/json-merge.js';
import { pythonJson, replaceDataFiles } from '../kit/data-files.js';
import { HookFailure, type BuiltinHook, type HookContext, type HookDeployment } from '../contract.js';
import type { HookDeclaration, ToolDeclaration } from '../declaration.js';
import type { HookLogFields } from '../kit/hook-log.js';
import { daemonGraceMs, DaemonUnreachable } from '../kit/daemon-reach.js';
import { ContainerCli, DOCKER_DAEMON } from '../kit/docker-cli.js';
import { hookRoot, pathSetting } from '../hook-paths.js';
import { result } from '../hook-result.js';

// Group "kubelet": the config is a pod manifest (v1beta2: `containers` with `name` and `image`), put where a
// standalone kubelet reads static pods; the hook then waits, as upstream, until every image is present and every
// container is running under the name the kubelet gives it. Upstream: heat-agents' hook-kubelet.py (which watched
// docker through docker-py) and its os-refresh-config script (which wrote the manifests). Docker is asked through its
// CLI, which honours DOCKER_HOST as docker-py did.

const manifestsDir = (env: NodeJS.ProcessEnv) =>
  pathSetting(env, 'HEAT_KUBELET_MANIFESTS', '/var/lib/heat-config/heat-config-kubelet/kubelet-manifests');

/**
 * Upstream's defaults, in seconds; each can be set in the deployment's options, as can daemon_timeout (the agent's
 * own, kit/daemon-reach.ts): how long docker's daemon may stay unreachable (starting at boot) before failing.
 */
const DEFAULTS = { images_timeout: 600, containers_timeout: 120, poll_period: 5 } as const;
/** Upstream polled without pause when poll_period was 0; one docker call per 100 ms is the most asked here. */
const MIN_POLL_MS = 100;

/** docker only, never podman: the kubelet runs its pods through docker, and podman does not list docker's containers. */
const DOCKER: ToolDeclaration = {
  name: 'docker',
  variable: 'HEAT_DOCKER_CMD',
  defaults: ['docker'],
  install: 'Install docker (Debian: docker.io).',
  daemon: DOCKER_DAEMON,
};

export const declaration: HookDeclaration = { group: 'kubelet', tool: DOCKER };

export const hook: BuiltinHook = {
  group: declaration.group,

  // The manifest goes when the deployment goes, and the kubelet then stops the pod, as upstream's
  // os-refresh-config script did by rewriting the directory.
  workFiles: (id, env) => [path.join(manifestsDir(env), `${id}.json`)],

  async run(deployment, ctx) {
    const pod = podOf(deployment);
    const timing = timingOf(deployment);
    const manifest = path.join(manifestsDir(ctx.env), `${deployment.id}.json`);
    const report = new Report(ctx);

    await replaceDataFiles(
      [{ file: manifest, mode: 0o600, content: pythonJson(deployment.config, { indent: 2, sortKeys: false }) }],
      hookRoot(ctx.env),
    );
    report.info('pod manifest written', { manifest });

    const docker = new DockerWatch(await ContainerCli.choose(ctx, DOCKER, timing.daemonMs), report);
    try {
      await waitForImages(docker, report, timing, pod.images);
      await waitForContainers(docker, report, timing, containerPatterns(deployment.id, pod.names));
    } catch (err) {
      if (!(err instanceof PodNotReady)) throw err;
      report.error('pod not running', { id: deployment.id, reason: err.message });
      return result({ stdout: report.all(), stderr: report.problems(), status: 1 });
    }
    return result({ stdout: report.all(), stderr: report.problems(), status: 0 });
  },
};

interface Pod {
  readonly images: string[];
  readonly names: string[];
}

function podOf(deployment: HookDeployment): Pod {
  const { config } = deployment;
  if (!isJsonObject(config))
    throw new HookFailure('the kubelet config must be a pod manifest (an object with "containers")');
  const containers = config.containers ?? [];
  const valid =
    Array.isArray(containers) &&
    containers.every(
      (c) =>
        isJsonObject(c) && typeof c.name === 'string' && c.name !== '' && typeof c.image === 'string' && c.image !== '',
    );
  if (!valid)
    throw new HookFailure(
      'the pod manifest\'s "containers" must be a list of objects, each with a "name" and an "image"',
    );
  const list = containers as Array<{ name: string; image: string }>;
  return { images: [...new Set(list.map((c) => c.image))], names: list.map((c) => c.name) };
}

interface Timing {
  readonly imagesMs: number;
  readonly containersMs: number;
  readonly pollMs: number;
  readonly daemonMs: number;
}

function timingOf(deployment: HookDeployment): Timing {
  const seconds = (key: keyof typeof DEFAULTS): number => {
    const value = deployment.options[key] ?? DEFAULTS[key];
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
      throw new HookFailure(
        `the kubelet option ${key} must be a number of seconds (0 or more), not ${JSON.stringify(value)}`,
      );
    }
    return value * 1000;
  };
  return {
    imagesMs: seconds('images_timeout'),
    containersMs: seconds('containers_timeout'),
    pollMs: Math.max(seconds('poll_period'), MIN_POLL_MS),
    daemonMs: daemonGraceMs(deployment.options, declaration.group),
  };
}

/** The kubelet names a pod's container /k8s_<container>.<hash>_<pod name>…, the pod named after the deployment id. */
export function containerPatterns(id: string, names: readonly string[]): Map<string, RegExp> {
  const podPart = escapeRegExp(id.replace(/-/g, '').slice(0, 15));
  // The API's names start with "/", the CLI's do not.
  return new Map(names.map((name) => [name, new RegExp(`^/?k8s_${escapeRegExp(name)}\\.[0-9a-z]{8}_${podPart}`)]));
}

function escapeRegExp(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&');
}

/** A wait that ended without the pod running. */
class PodNotReady extends Error {}

async function waitForImages(
  docker: DockerWatch,
  report: Report,
  timing: Timing,
  images: readonly string[],
): Promise<void> {
  // An image without a tag matches any tag of it.
  const missing = new Set(images.map((i) => (i.includes(':') ? i : `${i}:`)));
  report.info('waiting for images', { images: images.join(', ') });
  await poll(
    timing.imagesMs,
    timing.pollMs,
    async () => {
      const present = await docker.lines(['images', '--format', '{{.Repository}}:{{.Tag}}']);
      for (const prefix of missing) {
        const found = present?.find((image) => image.startsWith(prefix));
        if (found !== undefined) {
          report.info('image found', { image: found });
          missing.delete(prefix);
        }
      }
      return missing.size === 0;
    },
    () =>
      `timed out after ${timing.imagesMs / 1000} seconds waiting for images: ${[...missing].join(', ')}${docker.lastError()}`,
  );
}

async function waitForContainers(
  docker: DockerWatch,
  report: Report,
  timing: Timing,
  patterns: Map<string, RegExp>,
): Promise<void> {
  const missing = new Map(patterns);
  report.info('waiting for containers', { patterns: [...patterns.values()].map((p) => p.source).join(', ') });
  await poll(
    timing.containersMs,
    timing.pollMs,
    async () => {
      const running = (await docker.lines(['ps', '--format', '{{.Names}}']))?.flatMap((line) => line.split(',')) ?? [];
      for (const [name, pattern] of missing) {
        const found = running.find((n) => pattern.test(n));
        if (found !== undefined) {
          report.info('container running', { container: name, name: found });
          missing.delete(name);
        }
      }
      return missing.size === 0;
    },
    async () => {
      const exited = await exitedContainers(docker, missing);
      return (
        `timed out after ${timing.containersMs / 1000} seconds waiting for containers: ${[...missing.keys()].join(', ')}` +
        `${exited.length ? ` (${exited.join('; ')})` : ''}${docker.lastError()}`
      );
    },
  );
}

/** Containers of the pod that ran and stopped: why a container "never came up" is usually here. */
async function exitedContainers(docker: DockerWatch, missing: Map<string, RegExp>): Promise<string[]> {
  const lines =
    (await docker.lines(['ps', '--all', '--filter', 'status=exited', '--format', '{{.Names}}\t{{.Status}}'])) ?? [];
  const found: string[] = [];
  for (const line of lines) {
    const [names = '', status = ''] = line.split('\t');
    for (const [name, pattern] of missing) {
      const match = names.split(',').find((n) => pattern.test(n));
      if (match !== undefined) found.push(`${name}: ${match} ${status}`);
    }
  }
  return found;
}

/** Calls `check` until it is true, every `pollMs`; past `timeoutMs` fails with the message `why` gives. */
async function poll(
  timeoutMs: number,
  pollMs: number,
  check: () => Promise<boolean>,
  why: () => string | Promise<string>,
): Promise<void> {
  // The monotonic clock: a wall-clock step must neither end the wait at once nor stretch it (docs/reliability.md, clock steps).
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    const left = deadline - performance.now();
    if (left <= 0) throw new PodNotReady(await why());
    await new Promise((resolve) => setTimeout(resolve, Math.min(pollMs, left)));
  }
}

/**
 * docker as the waits ask it: a failed call (docker may be starting at boot) is logged once per distinct error and the
 * wait goes on, naming the last one if it times out; a daemon unreachable past its grace period (kit/daemon-reach.ts)
 * ends the wait at once.
 */
class DockerWatch {
  private error = '';

  constructor(
    private readonly docker: ContainerCli,
    private readonly report: Report,
  ) {}

  /** The command's output lines, or null when it failed. */
  async lines(args: string[]): Promise<string[] | null> {
    try {
      const answer = await this.docker.query(args);
      const failure = 'lines' in answer ? '' : answer.failure;
      if (failure !== '' && failure !== this.error)
        this.report.warn('docker failed', { command: `${this.docker.command} ${args[0] ?? ''}`, reason: failure });
      if (failure !== '') this.error = failure;
      this.docker.daemon.note(`docker ${args[0] ?? ''}`, failure);
      return 'lines' in answer ? answer.lines : null;
    } catch (err) {
      if (err instanceof DaemonUnreachable) throw new PodNotReady(err.message);
      throw err;
    }
  }

  lastError(): string {
    return this.error ? `; docker last failed with ${this.error}` : '';
  }
}

/** The hook's log, also kept as upstream kept it for the result: every line as deploy_stdout, problems as deploy_stderr. */
class Report {
  private readonly lines: string[] = [];
  private readonly problemLines: string[] = [];

  constructor(private readonly ctx: HookContext) {}

  info(message: string, fields: HookLogFields): void {
    this.ctx.log.info(message, fields);
    this.keep('INFO', message, fields);
  }

  warn(message: string, fields: HookLogFields): void {
    this.ctx.log.warn(message, fields);
    this.problemLines.push(this.keep('WARNING', message, fields));
  }

  error(message: string, fields: HookLogFields): void {
    this.ctx.log.error(message, fields);
    this.problemLines.push(this.keep('ERROR', message, fields));
  }

  all(): string {
    return this.lines.join('');
  }

  problems(): string {
    return this.problemLines.join('');
  }

  private keep(level: string, message: string, fields: HookLogFields): string {
    const values = Object.entries(fields)
      .map(([k, v]) => ` ${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
      .join('');
    const line = this.ctx.log.mask(`[${new Date().toISOString()}] (heat-config) [${level}] ${message}${values}\n`);
    this.lines.push(line);
    return line;
  }
}
