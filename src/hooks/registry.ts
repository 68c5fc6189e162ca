import { AgentError } from '../errors.js';
import type { BuiltinHook } from './contract.js';
import type { HookDeclaration, HookModule } from './declaration.js';
import { removeFiles } from './kit/work-files.js';

// The agent's built-in hooks, by group: one module of groups/ each, named after its group, exporting its hook and
// its declaration (declaration.ts). Each is loaded on first use, so a process that runs no deployment of that group
// never reads its code. The build makes one executable per entry (dist/hooks/<group>), `doctor` judges each by its
// declaration, and a test checks that every module of groups/ is here and declares itself.

const MODULES: Readonly<Record<string, () => Promise<HookModule>>> = {
  ansible: () => import('./groups/ansible.js'),
  'apply-config': () => import('./groups/apply-config.js'),
  'cfn-init': () => import('./groups/cfn-init.js'),
  chef: () => import('./groups/chef.js'),
  'docker-cmd': () => import('./groups/docker-cmd.js'),
  'docker-compose': () => import('./groups/docker-compose.js'),
  hiera: () => import('./groups/hiera.js'),
  'json-file': () => import('./groups/json-file.js'),
  kubelet: () => import('./groups/kubelet.js'),
  puppet: () => import('./groups/puppet.js'),
  salt: () => import('./groups/salt.js'),
  script: () => import('./groups/script.js'),
};

/** Every built-in group; also what the build reads to make dist/hooks/. */
export const BUILTIN_HOOK_GROUPS: readonly string[] = Object.keys(MODULES);

/**
 * The module serving `group`, or undefined when the agent has none. Refuses (rejects with ERR_HOOK) a module that does
 * not declare itself for that group: its hook would run with nothing saying what it drives.
 */
export function loadHookModule(group: string): Promise<HookModule> | undefined {
  if (!Object.hasOwn(MODULES, group)) return undefined;
  return MODULES[group]!().then((module: Partial<HookModule>) => {
    const { declaration, hook } = module;
    if (declaration?.group !== group || hook?.group !== group) {
      throw new AgentError(
        'ERR_HOOK',
        `the built-in hook module for group "${group}" does not declare itself (an exported declaration and hook, both of group "${group}"): a defect of this build; report it`,
      );
    }
    return { declaration, hook };
  });
}

/** The built-in hook serving `group`, or undefined when the agent has none. */
export function loadBuiltinHook(group: string): Promise<BuiltinHook> | undefined {
  return loadHookModule(group)?.then((module) => module.hook);
}

/** What the built-in hook serving `group` declares, or undefined when the agent has none. */
export function loadHookDeclaration(group: string): Promise<HookDeclaration> | undefined {
  return loadHookModule(group)?.then((module) => module.declaration);
}

/**
 * Removes the work files a built-in hook kept for a deployment (its script, manifest, playbook...). Returns them;
 * nothing for a group the agent has no hook for.
 */
export async function removeWorkFiles(group: string, id: string, env: NodeJS.ProcessEnv): Promise<string[]> {
  const loading = loadBuiltinHook(group);
  if (!loading) return [];
  const files = (await loading).workFiles(id, env);
  await removeFiles(...files);
  return files;
}
