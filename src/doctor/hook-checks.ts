import type { LoadedConfig } from '../config/load.js';
import { errorMessage } from '../errors.js';
import { UNGROUPED } from '../heat/deployment.js';
import type { ToolDeclaration } from '../hooks/declaration.js';
import { candidateNames, chooseTool, type Probe } from '../hooks/kit/choose-tool.js';
import { findHook, hookDirs } from '../hooks/locate.js';
import { loadHookDeclaration } from '../hooks/registry.js';
import { COMPONENT_GROUP } from '../heat/component.js';
import { deploymentsFrom, readCachedMetadata } from '../deploy/deployments-input.js';
import type { Logger } from '../log/logger.js';
import { isJsonObject } from '../util/json-merge.js';
import { runProcess } from '../util/process-group.js';
import { fail, ok, skipped, type CheckResult } from './check.js';

// For each group in the cached metadata's deployments: the hook the agent would run (found as dispatch finds it,
// executable), and the program that hook drives installed. A component deployment counts each of its configs' tools.
// The program is the one the built-in hook of that group would start here, chosen from its declaration by the rule
// the hook itself uses (hooks/kit/choose-tool.ts), with the environment the hooks get: a subcommand is probed as the
// hook probes it.

/** Groups without a hook that the apply step serves, as in dispatch. */
const APPLY_GROUPS = new Set(['os-apply-config', UNGROUPED]);

export async function hookChecks(
  loaded: LoadedConfig,
  log: Logger,
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
): Promise<CheckResult[]> {
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
  const probe = processProbe(env, timeoutMs);
  return Promise.all(groups.map((group) => groupCheck(loaded, group, dirs, env, probe)));
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
  probe: Probe,
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
      lookup.found.fix ?? `make it an executable file: chmod 0755 ${shown}`,
    );
  let tool: ToolDeclaration | undefined;
  try {
    tool = (await loadHookDeclaration(group))?.tool;
  } catch (err) {
    return fail(id, errorMessage(err), 'reinstall the agent; report the defect if it stays');
  }
  const choice = tool && (await chooseTool(tool, env, probe));
  if (!tool || !choice) return ok(id, `hook ${shown}`);
  if (choice.found !== undefined) {
    const daemon = tool.daemon ? `, whose service (${tool.daemon}) is not checked` : '';
    return ok(id, `hook ${shown}; it drives ${[choice.found, ...choice.prefix].join(' ')}${daemon}`);
  }
  const set = choice.by === 'variable' ? ` (named by ${tool.variable})` : '';
  const variable = tool.variable ? ` Or set ${tool.variable} to its path in the agent's environment.` : '';
  return fail(
    id,
    `hook ${shown} drives ${candidateNames(tool, env)}${set}, which is not installed (PATH=${env.PATH ?? ''})`,
    `${tool.install}${variable}`,
  );
}

/** Runs a subcommand's probe (`docker compose version`) as the hook would, bounded by the checks' timeout. */
function processProbe(env: NodeJS.ProcessEnv, timeoutMs: number): Probe {
  return async (file, args) => (await runProcess({ file, args, env, timeoutMs })).exitCode === 0;
}
