import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { installBuiltinHooks } from '../helpers/bundle.js';
import { startDaemon, until } from '../helpers/fault-daemon.js';
import { startOrchestrator, type Orchestrator } from '../helpers/orchestrator/orchestrator.js';

// The whole product against the simulated orchestrator: `os-config-agent run` starts from a cold root where only
// heat_local data exists (what Heat's cloud-init part-handler leaves), configures itself for the CFN transport,
// renders templates, runs script deployments through the bundled hook and signals; then the test adds a
// deployment, an UPDATE, a DELETE and a deployment to a missing hook, and checks convergence and the exact signals.

function prepareRoot(dir: string, o: Orchestrator): string {
  const root = path.join(dir, 'root');
  mkdirSync(path.join(root, 'etc'), { recursive: true });
  writeFileSync(
    path.join(root, 'etc/os-collect-config.conf'),
    '[DEFAULT]\ncollectors = heat_local\ncollectors = local\nmin_polling_interval = 0.2\npolling_interval = 1\n[agent]\npoll_jitter = 0\n',
    { mode: 0o600 },
  );
  const cfnInit = path.join(root, 'var/lib/heat-cfntools/cfn-init-data');
  mkdirSync(path.dirname(cfnInit), { recursive: true, mode: 0o700 });
  writeFileSync(cfnInit, JSON.stringify(o.metadata()), { mode: 0o600 });
  installBuiltinHooks(path.join(root, 'var/lib/heat-config/hooks'));
  const templates = path.join(root, 'usr/libexec/os-apply-config/templates/etc/app');
  mkdirSync(templates, { recursive: true });
  writeFileSync(path.join(templates, 'app.conf'), 'port = {{app.port}}\nname = {{app.name}}\n');
  return root;
}

t.test('cold boot from heat_local to converged deployments over CFN', async (t) => {
  const o = await startOrchestrator({ transport: 'POLL_SERVER_CFN' });
  t.teardown(() => o.close());
  const script = (body: string) => `#!/bin/sh\n${body}\n`;
  const first = o.addDeployment({
    name: 'first',
    group: 'script',
    config: script(
      'echo "s=$s n=$n b=$b l=$l j=$j action=$deploy_action"; printf "%s" "$j" > "$heat_outputs_path.json_out"; echo to-stderr >&2',
    ),
    inputs: [
      { name: 's', type: 'String', value: 'text with spaces' },
      { name: 'n', type: 'Number', value: 42 },
      { name: 'b', type: 'Boolean', value: true },
      { name: 'l', type: 'CommaDelimitedList', value: 'a,b,c' },
      { name: 'j', type: 'Json', value: { k: [1, 2] } },
    ],
    outputs: [{ name: 'json_out' }],
  });
  const settings = o.addDeployment({
    name: 'settings',
    group: 'os-apply-config',
    config: { app: { port: 8080, name: 'demo' } },
    signal: 'NO_SIGNAL',
  });
  const root = prepareRoot(t.testdir(), o);
  const agent = startDaemon(root);
  t.teardown(() => {
    if (agent.child.exitCode === null) agent.child.kill('SIGKILL');
  });

  await until('first signal', () => o.signals.some((s) => s.deploymentId === first));
  const sig = o.signals.find((s) => s.deploymentId === first)!;
  t.equal(Number(sig.body.deploy_status_code), 0, 'first deployment succeeded');
  // A JSON input reaches the script in Python's json.dumps form, as upstream's hook-script.py writes it.
  t.match(String(sig.body.deploy_stdout), 's=text with spaces n=42 b=true l=a,b,c j={"k": [1, 2]} action=CREATE');
  t.match(String(sig.body.deploy_stderr), 'to-stderr');
  t.same(JSON.parse(String(sig.body.json_out)), { k: [1, 2] }, 'declared output read back from heat_outputs_path');

  const conf = readFileSync(path.join(root, 'etc/os-collect-config.conf'), 'utf8');
  t.match(conf, /collectors = cfn/, 'the agent configured itself for the CFN transport');
  t.equal(statSync(path.join(root, 'etc/os-collect-config.conf')).mode & 0o777, 0o600);
  await until('rendered template', () => existsSync(path.join(root, 'etc/app/app.conf')));
  t.equal(readFileSync(path.join(root, 'etc/app/app.conf'), 'utf8'), 'port = 8080\nname = demo\n');

  // A new deployment, an UPDATE (new id, new input), a DELETE, and a group with no hook.
  const second = o.addDeployment({ name: 'second', group: 'script', config: script('echo second') });
  const update = o.addDeployment({
    name: 'first',
    group: 'script',
    action: 'UPDATE',
    config: script('echo "update s=$s $deploy_action"'),
    inputs: [{ name: 's', value: 'new value' }],
  });
  const del = o.addDeployment({
    name: 'cleanup',
    group: 'script',
    action: 'DELETE',
    config: script('echo "deleting on $deploy_action"'),
  });
  const missing = o.addDeployment({ name: 'nohook', group: 'no-such-tool', config: 'x' });
  await until('four more signals', () =>
    [second, update, del, missing].every((id) => o.signals.some((s) => s.deploymentId === id)),
  );
  const byId = (id: string) => o.signals.filter((s) => s.deploymentId === id);
  t.match(String(byId(update)[0]?.body.deploy_stdout), 'update s=new value UPDATE');
  t.match(String(byId(del)[0]?.body.deploy_stdout), 'deleting on DELETE');
  t.not(String(byId(missing)[0]?.body.deploy_status_code), '0', 'a missing hook is a failure signal');
  t.match(String(byId(missing)[0]?.body.deploy_stderr), /no-such-tool/);

  // Let a few more polls pass: nothing is signalled twice, nothing re-runs.
  const polls = o.requests.cfn ?? 0;
  await until('three more polls', () => (o.requests.cfn ?? 0) >= polls + 3);
  for (const id of o.deploymentIds()) {
    const expected = id === settings ? 0 : 1;
    t.equal(byId(id).length, expected, `deployment ${id} signalled ${expected} time(s)`);
  }

  agent.child.kill('SIGTERM');
  t.equal((await agent.exit).code, 0, 'SIGTERM exits 0');

  // Secrets audit: no credential in any log line or in any world-readable file under the root.
  const secrets = [o.creds.cfnSecret, o.creds.signalSecret, o.creds.password, o.creds.swiftKey];
  const signatures = (o.metadata().deployments as Array<{ inputs: Array<{ name: string; value: unknown }> }>)
    .flatMap((d) => d.inputs)
    .filter((i) => i.name === 'deploy_signal_id')
    .map((i) => new URL(String(i.value)).searchParams.get('Signature') ?? '')
    .filter(Boolean);
  const logText = agent.raw.join('\n');
  for (const s of [...secrets, ...signatures]) t.notOk(logText.includes(s), 'no secret or signature in the logs');
  for (const file of walk(root)) {
    const st = statSync(file);
    if (!(st.mode & 0o004)) continue;
    const text = readFileSync(file, 'utf8');
    for (const s of [...secrets, ...signatures])
      t.notOk(text.includes(s), `world-readable ${path.relative(root, file)} holds no secret`);
  }
});

function walk(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    const st = statSync(p);
    if (st.isDirectory()) out.push(...walk(p));
    else if (st.isFile()) out.push(p);
  }
  return out;
}
