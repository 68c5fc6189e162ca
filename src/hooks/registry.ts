import type { BuiltinHook } from './contract.js';
import { removeFiles } from './kit/work-files.js';

// The agent's built-in hooks, by group. Each is loaded on first use, so a process that runs no deployment of that
// group never reads its code. The build makes one executable per entry (dist/hooks/<group>).

const LOADERS: Readonly<Record<string, () => Promise<BuiltinHook>>> = {
  ansible: async () => (await import('./groups/ansible.js')).hook,
  'apply-config': async () => (await import('./groups/apply-config.js')).hook,
  'cfn-init': async () => (await import('./groups/cfn-init.js')).hook,
  chef: async () => (await import('./groups/chef.js')).hook,
  'docker-cmd': async () => (await import('./groups/docker-cmd.js')).hook,
  'docker-compose': async () => (await import('./groups/docker-compose.js')).hook,
  hiera: async () => (await import('./groups/hiera.js')).hook,
  'json-file': async () => (await import('./groups/json-file.js')).hook,
  kubelet: async () => (await import('./groups/kubelet.js')).hook,
  puppet: async () => (await import('./groups/puppet.js')).hook,
  salt: async () => (await import('./groups/salt.js')).hook,
  script: async () => (await import('./groups/script.js')).hook,
};

export const BUILTIN_HOOK_GROUPS: readonly string[] = Object.keys(LOADERS);

/** The built-in hook serving `group`, or undefined when the agent has none. */
export function loadBuiltinHook(group: string): Promise<BuiltinHook> | undefined {
  return Object.hasOwn(LOADERS, group) ? LOADERS[group]!() : undefined;
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
