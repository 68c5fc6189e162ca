import { randomInt } from 'node:crypto';
import { inputText } from '../../heat/deployment.js';
import { daemonGraceMs } from '../kit/daemon-reach.js';
import { CONTAINER_CLI, ContainerCli, lastLine } from '../kit/docker-cli.js';
import {
  containerDefs,
  containerLabels,
  environmentPairs,
  execArguments,
  runArguments,
  type ContainerDef,
} from '../kit/docker-containers.js';
import { HookFailure, type BuiltinHook, type HookContext, type HookDeployment } from '../contract.js';
import type { HookDeclaration } from '../declaration.js';
import { inputValues } from '../hook-deployment.js';
import { result } from '../hook-result.js';
import { formatCommand } from '../kit/run-tool.js';

// Group "docker-cmd": the config names containers, each run (`docker run`) or executed in (`docker exec`) in start
// order through the docker CLI, labelled with the deployment so they can be found again. The containers of a
// deployment go when it is deleted or leaves the metadata; one that had to take a suffixed name (its name was still
// held by the deployment it replaces) then gets its own name back. Upstream: heat-agents' hook-docker-cmd.py and its
// os-refresh-config script 50-heat-config-docker-cmd.

/** Attempts at a free name before giving up (upstream tried for ever). */
const NAME_ATTEMPTS = 20;
const SUFFIX_CHARS = 'abcdefghijklmnopqrstuvwxyz0123456789';

export const declaration: HookDeclaration = { group: 'docker-cmd', tool: CONTAINER_CLI };

export const hook: BuiltinHook = {
  group: declaration.group,
  acceptsNoId: true,

  // Nothing on disk: what it keeps are containers, which `removed` takes away.
  workFiles: () => [],

  async run(deployment, ctx) {
    const { log } = ctx;
    const docker = await ContainerCli.choose(ctx, CONTAINER_CLI, daemonGraceMs(deployment.options, declaration.group));
    const values = inputValues(deployment);
    if (values.deploy_action === 'DELETE') {
      // A daemon that is down must not block the stack's deletion (upstream did nothing here at all): the removal is
      // tried again when the deployment leaves the metadata.
      // Without an id nothing tells this deployment's containers apart (upstream removed none either).
      if (deployment.id === '') return result({ status: 0 });
      try {
        await removeContainers(ctx, docker, deployment.id);
        return result({ status: 0 });
      } catch (err) {
        if (!(err instanceof HookFailure)) throw err;
        log.warn('containers not removed; tried again when the deployment leaves the metadata', {
          reason: err.message,
        });
        return result({ stderr: `${err.message}\n`, status: 0 });
      }
    }
    const defs = containerDefs(deployment.config);
    if (defs.length === 0) {
      log.info('no containers in the config; nothing to do');
      return result({ status: 0 });
    }
    log.addSecrets(environmentPairs(defs));
    const stdouts: string[] = [];
    const stderrs: string[] = [];
    let status = 0;
    for (const def of defs) {
      log.info('container', { container: def.name, action: def.action });
      const args =
        def.action === 'run'
          ? ['run', '--name', await freeName(docker, def.name), ...labelsFor(def, deployment), ...runArguments(def)]
          : ['exec', ...execArguments(def, await execTarget(docker, def, deployment.id))];
      const run = await docker.run(args, `container "${def.name}"`);
      if (run.stdout) stdouts.push(run.stdout);
      if (run.stderr) stderrs.push(run.stderr);
      if (def.exitCodes.includes(run.status)) continue;
      // As upstream: the status is the last failing container's, the others still run, and deploy_stderr is what the
      // commands printed (the failing container is named in the log).
      status = run.status;
      log.error('container failed', {
        container: def.name,
        command: formatCommand(docker.command, args),
        exitCode: run.status,
        reason: lastLine(run.stderr),
      });
    }
    return result({ stdout: stdouts.join('\n'), stderr: stderrs.join('\n'), status });
  },

  async removed(id, ctx) {
    // No grace period: a removal holds no deployment, and a daemon that refuses it fails it at once, for the log.
    const docker = await ContainerCli.choose(ctx, CONTAINER_CLI, 0);
    await removeContainers(ctx, docker, id);
    await restoreNames(ctx, docker);
  },
};

function labelsFor(def: ContainerDef, deployment: HookDeployment): string[] {
  const values = inputValues(deployment);
  const text = (name: string) => (values[name] === undefined ? '' : inputText(values[name]));
  return containerLabels(def, deployment.id, text('deploy_stack_id'), text('deploy_resource_name'));
}

/**
 * The container's own name, or with a random suffix while something holds it: upstream's rule and upstream's command
 * (`inspect --format exists NAME`, so an image or volume of that name counts too), which heat-agents' tests check.
 */
async function freeName(docker: ContainerCli, wanted: string): Promise<string> {
  let name = wanted;
  for (let i = 0; i < NAME_ATTEMPTS; i++) {
    // Any answer but "found" leaves the name free, as upstream (a daemon that cannot be reached fails the call).
    const res = await docker.run(['inspect', '--format', 'exists', name], `container "${wanted}"`);
    if (res.status !== 0) return name;
    const suffix = Array.from({ length: 8 }, () => SUFFIX_CHARS[randomInt(SUFFIX_CHARS.length)]).join('');
    name = `${wanted}-${suffix}`;
  }
  throw new HookFailure(`container "${wanted}": no free name after ${NAME_ATTEMPTS} attempts`);
}

/** The container an exec runs in: the one this deployment started under that name, else the name as written. */
async function execTarget(docker: ContainerCli, def: ContainerDef, configId: string): Promise<string> {
  const written = def.command[0]!;
  const res = await docker.run(
    [
      'ps',
      '-a',
      '--filter',
      `label=container_name=${written}`,
      '--filter',
      `label=config_id=${configId}`,
      '--format',
      '{{.Names}}',
    ],
    `container "${def.name}"`,
  );
  const found = res.status === 0 ? res.stdout.split(/\s+/).find((n) => n !== '') : undefined;
  return found ?? written;
}

/** Removes every container docker-cmd ran for the deployment (upstream's configure.d script did it by config_id). */
async function removeContainers(ctx: HookContext, docker: ContainerCli, configId: string): Promise<void> {
  const list = await docker.run(
    ['ps', '-q', '-a', '--filter', 'label=managed_by=docker-cmd', '--filter', `label=config_id=${configId}`],
    'listing containers',
  );
  if (list.status !== 0) throw listFailure(docker.command, list.stderr, list.status);
  const ids = list.stdout.split(/\s+/).filter((c) => c !== '');
  if (ids.length === 0) return;
  const rm = await docker.run(['rm', '-f', ...ids], 'removing containers');
  if (rm.status !== 0)
    throw new HookFailure(
      `the containers of deployment ${configId} could not be removed: ${docker.command} rm failed with status ${rm.status}: ${lastLine(rm.stderr)}`,
    );
  ctx.log.info('containers removed', { config_id: configId, containers: ids.length });
}

/**
 * Containers that took a suffixed name get their own name back once nobody holds it (upstream renamed any container
 * with a container_name label; here only docker-cmd's own).
 */
async function restoreNames(ctx: HookContext, docker: ContainerCli): Promise<void> {
  const list = await docker.run(
    ['ps', '-a', '--filter', 'label=managed_by=docker-cmd', '--format', '{{.Names}} {{.Label "container_name"}}'],
    'listing containers',
  );
  if (list.status !== 0) throw listFailure(docker.command, list.stderr, list.status);
  const pairs = list.stdout
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .filter((p) => p[0] !== undefined && p[0] !== '');
  const taken = new Set(pairs.map((p) => p[0]!));
  for (const [current, wanted] of pairs.sort((a, b) => a[0]!.localeCompare(b[0]!))) {
    if (wanted === undefined || wanted === current) continue;
    if (taken.has(wanted)) {
      ctx.log.info('container keeps its suffixed name; its own name is taken', { container: current, wanted });
      continue;
    }
    const rename = await docker.run(['rename', current!, wanted], `renaming container "${current}"`);
    if (rename.status === 0) {
      taken.delete(current!);
      taken.add(wanted);
    } else {
      ctx.log.warn('container could not be renamed', { container: current, wanted, reason: lastLine(rename.stderr) });
    }
  }
}

function listFailure(docker: string, stderr: string, status: number): HookFailure {
  return new HookFailure(`${docker} ps failed with status ${status}: ${lastLine(stderr)}`);
}
