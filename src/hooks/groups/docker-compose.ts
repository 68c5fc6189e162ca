import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { isJsonObject } from '../../util/json-merge.js';
import { composeCommand } from '../kit/compose-cli.js';
import { replaceDataFiles } from '../kit/data-files.js';
import { toolCommand } from '../kit/choose-tool.js';
import { DaemonReach, daemonGraceMs } from '../kit/daemon-reach.js';
import { CONTAINER_CLI, dockerLink, lastLine } from '../kit/docker-cli.js';
import { HookFailure, type BuiltinHook, type HookContext } from '../contract.js';
import type { HookDeclaration, ToolDeclaration } from '../declaration.js';
import { inputValues } from '../hook-deployment.js';
import { pathSetting } from '../hook-paths.js';
import { result } from '../hook-result.js';
import { notInstalled, runTool, type ToolOutcome } from '../kit/run-tool.js';
import { prepareDir, removeFiles, writeWorkFile } from '../kit/work-files.js';

// Group "docker-compose": the config is a compose file, brought up (`up -d --no-build`) as the project
// <working>/<deployment name>, with the env files the `env_files` input carries. DELETE, or the deployment leaving
// the metadata, brings the project down and removes its directory. Upstream: heat-agents' hook-docker-compose.py and
// its os-refresh-config script 50-heat-config-docker-compose (which wrote the compose file; the hook does here).

const workingDir = (env: NodeJS.ProcessEnv) =>
  pathSetting(env, 'HEAT_DOCKER_COMPOSE_WORKING', '/var/lib/heat-config/heat-config-docker-compose');
const COMPOSE_FILE = 'docker-compose.yml';
/** Which deployment last brought the project up: a later deployment of the same name takes the project over. */
const OWNER_FILE = '.heat-config-deployment-id';

const COMPOSE: ToolDeclaration = {
  name: 'docker-compose',
  variable: 'HEAT_DOCKER_COMPOSE_CMD',
  defaults: [{ of: CONTAINER_CLI, args: ['compose'], probe: ['compose', 'version'] }, 'docker-compose'],
  install: 'Install docker-compose (Debian, Ubuntu) or the docker compose plugin.',
  ...(CONTAINER_CLI.daemon === undefined ? {} : { daemon: CONTAINER_CLI.daemon }),
};

export const declaration: HookDeclaration = { group: 'docker-compose', tool: COMPOSE };

export const hook: BuiltinHook = {
  group: declaration.group,
  acceptsNoId: true,

  // The project directory is named after the deployment's name, not its id; `removed` finds it by OWNER_FILE.
  workFiles: () => [],

  async run(deployment, ctx) {
    const { log, env } = ctx;
    const project = projectDir(workingDir(env), deployment.name);
    const values = inputValues(deployment);
    if (values.deploy_action === 'DELETE') return deleteProject(ctx, project);
    const graceMs = daemonGraceMs(deployment.options, declaration.group);

    const config = composeConfig(deployment.config);
    if (config === undefined) {
      log.info('no compose config; nothing to do');
      return result({ status: 0 });
    }
    const envFiles = envFileContents(values.env_files);
    // Everything checked before anything is written, so a bad env file name leaves the project as it was.
    const writes = referencedEnvFiles(config.doc)
      .filter((f) => envFiles.has(f))
      .map((f) => [envFilePath(project, f), envFiles.get(f)!] as const);
    await prepareDir(workingDir(env));
    await prepareDir(project);
    // Placed by the rule for files a deployment names: inside the project directory, through no link leading out.
    await replaceDataFiles(
      writes.map(([file, content]) => ({ file, content, mode: 0o600 })),
      project,
    );
    await writeWorkFile(path.join(project, COMPOSE_FILE), config.text, 0o600);
    await writeWorkFile(path.join(project, OWNER_FILE), deployment.id, 0o600);
    const run = await compose(ctx, project, ['up', '-d', '--no-build'], graceMs);
    if (run.status === 0) {
      log.info('compose project up', { project });
      return result(run);
    }
    // compose's own output is the result, as upstream; the log names the project and the cause.
    log.error('compose up failed', { project, exitCode: run.status, reason: lastLine(run.stderr) });
    return result(run);
  },

  async removed(id, ctx) {
    const working = workingDir(ctx.env);
    let names: string[];
    try {
      names = await readdir(working);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    for (const name of names) {
      const project = path.join(working, name);
      const owner = await readFile(path.join(project, OWNER_FILE), 'utf8').catch(() => undefined);
      if (owner !== id) continue;
      const down = await takeDown(ctx, project);
      if (down.status !== 0)
        throw new HookFailure(
          `compose project ${project} could not be brought down (status ${down.status}): ${lastLine(down.stderr)}`,
        );
    }
  },
};

/** <working>/<name>; a name that is not a plain file name would put the project elsewhere. */
function projectDir(working: string, name: string): string {
  if (name === '' || name === '.' || name === '..' || name.includes('/') || name.includes('\0')) {
    throw new HookFailure(
      `the deployment name ${JSON.stringify(name)} cannot name a compose project directory: give the deployment a name without "/"`,
    );
  }
  return path.join(working, name);
}

/** The compose file's text and content; undefined for an empty config (upstream: nothing to do). */
function composeConfig(config: unknown): { text: string; doc: Record<string, unknown> } | undefined {
  if (config === null || config === undefined || config === '') return undefined;
  if (isJsonObject(config)) return Object.keys(config).length === 0 ? undefined : { text: toYaml(config), doc: config };
  if (typeof config !== 'string')
    throw new HookFailure('the docker-compose config must be a compose file (a mapping, or its YAML text)');
  let doc: unknown;
  try {
    doc = parseYaml(config) as unknown;
  } catch (err) {
    throw new HookFailure(`the docker-compose config is not valid YAML: ${lastLine((err as Error).message)}`);
  }
  if (!isJsonObject(doc)) throw new HookFailure('the docker-compose config must be a mapping (a compose file)');
  return { text: config, doc };
}

/** env_file entries of the services (top-level services in a version 1 file, under `services` otherwise). */
function referencedEnvFiles(doc: Record<string, unknown>): string[] {
  const services = isJsonObject(doc.services) ? doc.services : doc;
  const files: string[] = [];
  for (const service of Object.values(services)) {
    if (!isJsonObject(service)) continue;
    const value = service.env_file;
    if (typeof value === 'string') files.push(value);
    else if (Array.isArray(value)) files.push(...value.filter((v): v is string => typeof v === 'string'));
  }
  return files;
}

/**
 * The `env_files` input: a list of {file_name, content}, given as a list or as its text (upstream read a Python
 * literal; JSON and YAML flow text are read here).
 */
function envFileContents(input: unknown): Map<string, string> {
  const files = new Map<string, string>();
  if (input === undefined || input === null || input === '') return files;
  let list: unknown = input;
  if (typeof input === 'string') {
    try {
      list = parseYaml(input) as unknown;
    } catch (err) {
      throw new HookFailure(
        `the env_files input is not a list of {file_name, content}: ${lastLine((err as Error).message)}`,
      );
    }
  }
  if (!Array.isArray(list)) throw new HookFailure('the env_files input must be a list of {file_name, content}');
  for (const item of list) {
    if (!isJsonObject(item) || typeof item.file_name !== 'string' || typeof item.content !== 'string') {
      throw new HookFailure('each entry of the env_files input needs a file_name and a content (strings)');
    }
    files.set(item.file_name, item.content);
  }
  return files;
}

/** An env file inside the project directory; a name that would leave it fails the deployment. */
function envFilePath(project: string, file: string): string {
  const normal = path.normalize(file);
  if (path.isAbsolute(file) || normal === '..' || normal.startsWith('../') || normal === '.' || file.includes('\0')) {
    throw new HookFailure(`env file ${JSON.stringify(file)} must be a path inside the compose project directory`);
  }
  return path.join(project, normal);
}

async function deleteProject(ctx: HookContext, project: string) {
  const down = await takeDown(ctx, project).catch((err: unknown): ToolOutcome => {
    if (!(err instanceof HookFailure)) throw err;
    return { status: 1, stdout: '', stderr: `${err.message}\n` };
  });
  if (down.status === 0) return result({ status: 0, stdout: down.stdout, stderr: down.stderr });
  // A daemon that is down must not block the stack's deletion (upstream did nothing here at all): the project is
  // kept and brought down when the deployment leaves the metadata.
  ctx.log.warn('compose project not brought down; tried again when the deployment leaves the metadata', {
    project,
    status: down.status,
  });
  return result({
    status: 0,
    stdout: down.stdout,
    stderr: `${down.stderr}compose project ${project} could not be brought down (status ${down.status})\n`,
  });
}

/**
 * `down` in the project, then its directory goes; a project never brought up is just removed. No grace period for
 * the daemon: a removal holds no deployment, and a daemon that refuses it fails it at once.
 */
async function takeDown(ctx: HookContext, project: string): Promise<ToolOutcome> {
  const hasFile = await readFile(path.join(project, COMPOSE_FILE)).then(
    () => true,
    () => false,
  );
  const down = hasFile ? await compose(ctx, project, ['down'], 0) : { status: 0, stdout: '', stderr: '' };
  if (down.status === 0) {
    await removeFiles(project);
    ctx.log.info('compose project removed', { project });
  }
  return down;
}

/** Runs compose in the project, its daemon given `graceMs` (kit/daemon-reach.ts), probed through the docker CLI. */
async function compose(
  ctx: HookContext,
  project: string,
  args: readonly string[],
  graceMs: number,
): Promise<ToolOutcome> {
  const command = await composeCommand(ctx, COMPOSE);
  const missing = ctx.env.HEAT_DOCKER_COMPOSE_CMD
    ? notInstalled(ctx.env, COMPOSE, command.file)
    : `docker-compose is not installed: neither "docker compose" nor "${command.file}" works (PATH=${ctx.env.PATH ?? ''}). ${COMPOSE.install} Or set HEAT_DOCKER_COMPOSE_CMD to its path.`;
  const docker = command.prefix.length > 0 ? command.file : await toolCommand(ctx, CONTAINER_CLI);
  const daemon = new DaemonReach(dockerLink(ctx, docker, command.file), graceMs);
  const run = { file: command.file, args: [...command.prefix, ...args], cwd: project, env: ctx.env };
  return daemon.call(
    `compose ${args[0] ?? ''}`,
    (signal) => runTool(ctx, { ...run, signal }, missing),
    (outcome) => (outcome.status === 0 ? '' : outcome.stderr),
  );
}
