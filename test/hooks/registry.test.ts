import { readdirSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import type { ToolDeclaration } from '../../src/hooks/declaration.js';
import { candidateNames, chooseTool, type Probe } from '../../src/hooks/kit/choose-tool.js';
import { BUILTIN_HOOK_GROUPS, loadBuiltinHook, loadHookDeclaration, loadHookModule } from '../../src/hooks/registry.js';
import { REPO } from '../helpers/bundle.js';

// The one list of built-in hooks, and what each declares: the group it serves and the program it drives.

const noProbe: Probe = async () => false;

t.test('the registry and src/hooks/groups list the same groups, and each hook serves its own', async (t) => {
  const files = readdirSync(path.join(REPO, 'src/hooks/groups'))
    .map((f) => f.replace(/\.ts$/, ''))
    .sort();
  t.same([...BUILTIN_HOOK_GROUPS].sort(), files);
  for (const group of files) t.equal((await loadBuiltinHook(group))?.group, group);
  t.equal(loadBuiltinHook('no-such-group'), undefined);
  t.equal(loadBuiltinHook('__proto__'), undefined, 'no prototype lookups');
});

t.test('every registration declares itself, and each declared program is one a hook can choose', async (t) => {
  for (const group of BUILTIN_HOOK_GROUPS) {
    const { declaration, hook } = (await loadHookModule(group))!;
    t.equal(declaration.group, group, `${group}: declared for its group`);
    t.equal(hook.group, group);
    const tool = declaration.tool;
    if (!tool) continue;
    t.not(tool.name, '', `${group}: the program has a name for messages`);
    t.match(tool.install, /^[A-Z].*\.$/, `${group}: the install hint is a sentence`);
    if (tool.variable !== undefined) t.match(tool.variable, /^[A-Z][A-Z0-9_]*$/, `${group}: a variable name`);
    // Every program a hook starts is named by its variable or has upstream's default to fall back on.
    t.ok(tool.variable !== undefined || tool.defaults.some((c) => typeof c === 'string'), `${group}: something to run`);
  }
  t.equal(loadHookDeclaration('no-such-group'), undefined);
});

t.test('a module that does not declare itself is refused', async (t) => {
  const { hook } = await import('../../src/hooks/groups/json-file.js');
  const registry = await t.mockImport<typeof import('../../src/hooks/registry.js')>('../../src/hooks/registry.js', {
    '../../src/hooks/groups/json-file.js': { hook },
    '../../src/hooks/groups/hiera.js': { hook, declaration: { group: 'json-file' } },
  });
  await t.rejects(registry.loadBuiltinHook('json-file')!, { code: 'ERR_HOOK', message: /does not declare itself/ });
  await t.rejects(registry.loadHookDeclaration('hiera')!, { code: 'ERR_HOOK' }, 'declared for another group');
  t.equal((await registry.loadHookDeclaration('script'))?.group, 'script', 'the others load');
});

t.test('the program each group drives: the hook variable when set, else the defaults in order', async (t) => {
  const tool = async (group: string): Promise<ToolDeclaration | undefined> => (await loadHookDeclaration(group))?.tool;
  const nothingInstalled = { PATH: t.testdir() };
  const names = async (group: string, env: NodeJS.ProcessEnv = nothingInstalled) => {
    const declared = await tool(group);
    return declared && (await chooseTool(declared, env, noProbe)) ? candidateNames(declared, env) : undefined;
  };
  t.equal(await names('puppet'), 'puppet');
  t.equal(await names('puppet', { HEAT_PUPPET_CMD: '/opt/puppetlabs/bin/puppet' }), '/opt/puppetlabs/bin/puppet');
  t.equal(await names('ansible'), 'ansible-playbook');
  t.equal(await names('chef'), 'chef-client');
  t.equal(await names('salt'), 'salt-call');
  t.equal(await names('docker-cmd'), 'docker or podman');
  t.equal(await names('kubelet'), 'docker', 'docker only: podman does not list the kubelet containers');
  t.equal(await names('docker-compose'), '"docker compose" or docker-compose');
  t.equal(await names('script'), 'bash');
  t.equal(await names('cfn-init'), undefined, 'the built-in cfn-init needs no program');
  t.equal(await names('cfn-init', { HEAT_CFN_INIT_CMD: 'cfn-init' }), 'cfn-init');
  t.equal(await names('apply-config'), undefined, "the agent's own apply needs no program");
  t.equal(await names('json-file'), undefined);
  t.equal(await names('hiera'), undefined);
});
