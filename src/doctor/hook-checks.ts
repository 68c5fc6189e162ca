import { constants as fsConstants, promises as fs } from 'node:fs';
import path from 'node:path';
import type { LoadedConfig } from '../config/load.js';
import { errorMessage } from '../errors.js';
import { UNGROUPED } from '../heat/deployment.js';
import { findHook, hookDirs } from '../hooks/locate.js';
import { COMPONENT_GROUP } from '../heat/component.js';
import { deploymentsFrom, readCachedMetadata } from '../deploy/deployments-input.js';
import type { Logger } from '../log/logger.js';
import { isJsonObject } from '../util/json-merge.js';
import { fail, ok, skipped, type CheckResult } from './check.js';
import { toolFor } from './tool-table.js';

// For each group in the cached metadata's deployments: the hook the agent would run (found as dispatch finds it,
// executable), and the program that hook drives installed. A component deployment counts each of its configs' tools.

/** Groups without a hook that the apply step serves, as in dispatch. */
const APPLY_GROUPS = new Set(['os-apply-config', UNGROUPED]);

export async function hookChecks(loaded: LoadedConfig, log: Logger, env: NodeJS.ProcessEnv): Promise<CheckResult[]> {
  let values: unknown[];
  try {
    values = await readCachedMetadata(loaded.config, loaded.paths, log);
  } catch (err) {
    return [
      skipped(
        'hooks',
        `no deployments to check: ${errorMessage(err).split(';')[0] ?? ''}`,
        'run the agent once (os-config-agent run --one-time) so the metadata is cached',
      ),
    ];
  }
  const deployments = deploymentsFrom(values, log) ?? [];
  const groups = groupsOf(deployments);
  if (groups.length === 0) return [skipped('hooks', 'the cached metadata has no deployments')];
  const dirs = hookDirs(loaded.config, loaded.paths, env);
  return Promise.all(groups.map((group) => groupCheck(loaded, group, dirs, env)));
}

export function groupsOf(deployments: readonly unknown[]): string[] {
  const groups = new Set<string>();
  for (const d of deployments) {
    if (!isJsonObject(d)) continue;
    const group = typeof d.group === 'string' && d.group !== '' ? d.group : UNGROUPED;
    if (group !== COMPONENT_GROUP) {
      groups.add(group);
      continue;
    }
    const configs = isJsonObject(d.config) ? d.config.configs : undefined;
    for (const entry of Array.isArray(configs) ? configs : [])
      if (isJsonObject(entry) && typeof entry.tool === 'string' && entry.tool !== '') groups.add(entry.tool);
  }
  return [...groups].sort();
}

async function groupCheck(
  loaded: LoadedConfig,
  group: string,
  dirs: readonly string[],
  env: NodeJS.ProcessEnv,
): Promise<CheckResult> {
  const id = `hook.${group}`;
  const shownDirs = dirs.map((d) => loaded.paths.unmap(d)).join(', ');
  const lookup = await findHook(group, dirs);
  if (!lookup.found) {
    if (APPLY_GROUPS.has(group)) return ok(id, "no hook needed: the apply step renders this group's config");
    return fail(
      id,
      `no hook "${lookup.name}" in ${shownDirs}: deployments of group "${group}" fail at once`,
      "install the hook (the agent's package ships one per built-in group), or correct the deployments' group",
    );
  }
  const shown = loaded.paths.unmap(lookup.found.path);
  if (!lookup.found.runnable)
    return fail(
      id,
      `hook ${shown} ${lookup.found.problem ?? 'cannot be run'}`,
      `make it an executable file: chmod 0755 ${shown}`,
    );
  const need = toolFor(group, env);
  if (!need) return ok(id, `hook ${shown}`);
  for (const command of need.alternatives) {
    const found = await findCommand(command, env);
    if (found) return ok(id, `hook ${shown}; it drives ${found}`);
  }
  const names = need.alternatives.join(' or ');
  const set = need.variable && env[need.variable] ? ` (named by ${need.variable})` : '';
  return fail(
    id,
    `hook ${shown} drives ${names}${set}, which is not installed (PATH=${env.PATH ?? ''})`,
    `${need.install}${need.variable ? `, or set ${need.variable} to its path in the agent's environment` : ''}`,
  );
}

/** An absolute or relative path as it is, else the first executable of that name in PATH. */
export async function findCommand(command: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  const candidates = command.includes('/')
    ? [command]
    : (env.PATH ?? '')
        .split(':')
        .filter((d) => d !== '')
        .map((d) => path.join(d, command));
  for (const file of candidates) {
    try {
      const st = await fs.stat(file);
      if (!st.isFile()) continue;
      await fs.access(file, fsConstants.X_OK);
      return file;
    } catch {
      // Not here.
    }
  }
  return undefined;
}
