import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import type { TapTest } from '../../helpers/http-test-server.js';
import { DEPLOY_INPUTS, HOOK_MODES, SECRET_INPUTS, SYSTEM_PATH, assertNoSecrets } from '../hook-process.js';

// The apply-config hook: the agent's own os-apply-config render over the metadata of $OS_CONFIG_FILES, under
// OS_CONFIG_AGENT_ROOT; or HEAT_APPLY_CONFIG_CMD when it is set (a real script here).

const deployment = {
  id: 'apply-0001',
  name: 'apply',
  group: 'apply-config',
  options: {},
  inputs: [...DEPLOY_INPUTS, ...SECRET_INPUTS],
  outputs: [],
  config: '',
};

function instance(t: TapTest, metadata: unknown) {
  const root = t.testdir();
  const templates = path.join(root, 'usr/libexec/os-apply-config/templates');
  mkdirSync(path.join(templates, 'etc/app'), { recursive: true });
  writeFileSync(path.join(templates, 'etc/app/app.conf'), 'port={{app.port}}\nname={{app.name}}\n');
  mkdirSync(path.join(root, 'var/lib/os-collect-config'), { recursive: true });
  writeFileSync(
    path.join(root, 'var/lib/os-collect-config/heat_local.json'),
    JSON.stringify({ app: { name: 'from-local' } }),
  );
  writeFileSync(path.join(root, 'var/lib/os-collect-config/deployment.json'), JSON.stringify(metadata));
  const env = {
    PATH: SYSTEM_PATH,
    OS_CONFIG_AGENT_ROOT: root,
    // As the phases pass it: the cycle's cache files in merge order (later wins).
    OS_CONFIG_FILES: '/var/lib/os-collect-config/heat_local.json:/var/lib/os-collect-config/deployment.json',
  };
  return { root, templates, env, output: path.join(root, 'etc/app/app.conf') };
}

for (const { name: mode, run } of HOOK_MODES) {
  t.test(
    `${mode}: renders the template tree over the merged metadata under the root and signals success`,
    async (t) => {
      const { env, output } = instance(t, { app: { port: 8080 } });
      const res = await run('apply-config', deployment, { env });
      t.equal(res.result.deploy_status_code, 0, String(res.result.deploy_stderr));
      t.equal(readFileSync(output, 'utf8'), 'port=8080\nname=from-local\n', 'later files win, objects merge');
      t.equal(res.result.deploy_stdout, '', 'nothing on stdout, as os-apply-config prints nothing when it succeeds');
      t.match(
        String(res.result.deploy_stderr),
        /templates applied written=1 unchanged=0 deleted=0/,
        'the summary is logged',
      );
      t.match(
        String(res.result.deploy_stderr),
        /writing file/,
        "the apply's log lines are its stderr, as os-apply-config's",
      );
      assertNoSecrets(t, `${res.stderr}${res.stdout}`, "the hook's output");

      const again = await run('apply-config', deployment, { env });
      t.match(
        String(again.result.deploy_stderr),
        /templates applied written=0 unchanged=1 deleted=0/,
        'a second run changes nothing',
      );
    },
  );

  t.test(`${mode}: a broken template tree fails with the apply's reason and writes nothing`, async (t) => {
    const { env, templates, output } = instance(t, { app: { port: 1 } });
    writeFileSync(path.join(templates, 'etc/app/app.conf.oac'), 'mode: not-a-mode\n');
    mkdirSync(path.join(templates, 'etc/other'), { recursive: true });
    writeFileSync(path.join(templates, 'etc/other/other.conf'), 'x={{app.port}}\n');
    const res = await run('apply-config', deployment, { env });
    t.equal(res.result.deploy_status_code, 1);
    t.match(String(res.result.deploy_stderr), /mode/, 'names the control file problem');
    t.match(String(res.result.deploy_stderr), /ERR_/, 'with the error code');
    t.notOk(existsSync(output), 'nothing written');
    t.notOk(
      existsSync(path.join(path.dirname(path.dirname(output)), 'other/other.conf')),
      'not even the good template',
    );
  });

  t.test(`${mode}: unreadable metadata fails naming the file`, async (t) => {
    const { env, root } = instance(t, { app: { port: 1 } });
    writeFileSync(path.join(root, 'var/lib/os-collect-config/deployment.json'), '{ not json');
    const res = await run('apply-config', deployment, { env });
    t.equal(res.result.deploy_status_code, 1);
    t.match(String(res.result.deploy_stderr), /deployment\.json/);
  });

  t.test(`${mode}: HEAT_APPLY_CONFIG_CMD runs that program with the hook's environment, as upstream`, async (t) => {
    const { env, root, output } = instance(t, { app: { port: 1 } });
    const program = path.join(root, 'my-apply');
    writeFileSync(program, '#!/bin/sh\necho "applied from $OS_CONFIG_FILES"\necho "some warning" >&2\nexit 3\n', {
      mode: 0o755,
    });
    const res = await run('apply-config', deployment, { env: { ...env, HEAT_APPLY_CONFIG_CMD: program } });
    t.equal(res.result.deploy_status_code, 3);
    t.equal(res.result.deploy_stdout, `applied from ${env.OS_CONFIG_FILES}\n`);
    t.equal(res.result.deploy_stderr, 'some warning\n');
    t.notOk(existsSync(output), "the agent's own apply did not run");

    const missing = await run('apply-config', deployment, {
      env: { ...env, HEAT_APPLY_CONFIG_CMD: path.join(root, 'absent') },
    });
    t.equal(missing.result.deploy_status_code, 1);
    t.match(String(missing.result.deploy_stderr), /HEAT_APPLY_CONFIG_CMD names .*absent, which was not found/);
  });
}

t.test('the executable is self-contained and stamped as the apply-config hook', async (t) => {
  const file = path.join(path.dirname(new URL(import.meta.url).pathname), '../../../dist/hooks/apply-config');
  t.ok(statSync(file).mode & 0o111, 'executable');
  t.match(readFileSync(file, 'utf8').split('\n')[1], /^\/\/ os-config-agent built-in hook group=apply-config /);
});
