import t from 'tap';
import { parseDeployment, type Deployment } from '../../src/heat/deployment.js';
import { signalTargetFor } from '../../src/heat/signal-target.js';

// Transport selection by input presence, as heat-config-notify.

function dep(inputs: Array<{ name: string; value: unknown }>): Deployment {
  const p = parseDeployment({ id: 'd1', inputs });
  if (!p.ok) throw new Error(p.reason);
  return p.deployment;
}
const ks = [
  { name: 'deploy_auth_url', value: 'http://ks/v3' },
  { name: 'deploy_user_id', value: 'u' },
  { name: 'deploy_password', value: 'secret-pw' },
  { name: 'deploy_project_id', value: 'p' },
];

t.test('deploy_signal_id: POST (CFN) unless the verb is PUT (TempURL)', async (t) => {
  t.same(signalTargetFor(dep([{ name: 'deploy_signal_id', value: 'http://h/v1/signal/x?Signature=s' }])), {
    ok: true,
    target: { transport: 'CFN_SIGNAL', url: 'http://h/v1/signal/x?Signature=s', verb: 'POST' },
  });
  t.same(
    signalTargetFor(
      dep([
        { name: 'deploy_signal_id', value: 'https://s/o' },
        { name: 'deploy_signal_verb', value: 'PUT' },
      ]),
    ),
    { ok: true, target: { transport: 'TEMP_URL_SIGNAL', url: 'https://s/o', verb: 'PUT' } },
  );
  t.same(
    signalTargetFor(
      dep([
        { name: 'deploy_signal_id', value: 'http://h/' },
        { name: 'deploy_signal_verb', value: 'GET' },
      ]),
    ).ok,
    true,
  );
  const noUrl = signalTargetFor(dep([{ name: 'deploy_signal_id', value: 'not a url' }]));
  t.same(noUrl, { ok: false, transport: 'CFN_SIGNAL', reason: 'deploy_signal_id is not a URL' });
  const file = signalTargetFor(
    dep([
      { name: 'deploy_signal_id', value: 'file:///etc/passwd' },
      { name: 'deploy_signal_verb', value: 'PUT' },
    ]),
  );
  t.equal(file.ok, false);
  if (!file.ok) t.equal(file.transport, 'TEMP_URL_SIGNAL');
  t.equal(
    signalTargetFor(dep([{ name: 'deploy_signal_id', value: 'http://h/' }, ...ks])).ok && 'CFN_SIGNAL',
    'CFN_SIGNAL',
    'the signal URL wins over credentials',
  );
});

t.test('deploy_queue_id: Zaqar; deploy_auth_url alone: Heat; nothing: no signal', async (t) => {
  const zaqar = signalTargetFor(
    dep([...ks, { name: 'deploy_queue_id', value: 'q1' }, { name: 'deploy_region_name', value: 'R1' }]),
  );
  t.same(zaqar, {
    ok: true,
    target: {
      transport: 'ZAQAR_SIGNAL',
      queueId: 'q1',
      authUrl: 'http://ks/v3',
      userId: 'u',
      password: 'secret-pw',
      projectId: 'p',
      region: 'R1',
    },
  });
  const heat = signalTargetFor(
    dep([...ks, { name: 'deploy_stack_id', value: 's/1' }, { name: 'deploy_resource_name', value: 'r' }]),
  );
  t.same(heat, {
    ok: true,
    target: {
      transport: 'HEAT_SIGNAL',
      stackId: 's/1',
      resourceName: 'r',
      authUrl: 'http://ks/v3',
      userId: 'u',
      password: 'secret-pw',
      projectId: 'p',
    },
  });
  t.same(signalTargetFor(dep([{ name: 'deploy_signal_transport', value: 'NO_SIGNAL' }])), {
    ok: true,
    target: { transport: 'NO_SIGNAL' },
  });
  t.same(
    signalTargetFor(dep([{ name: 'deploy_signal_id', value: '' }])),
    { ok: true, target: { transport: 'NO_SIGNAL' } },
    'an empty signal id is absent',
  );
});

t.test('missing credentials are named', async (t) => {
  const heat = signalTargetFor(
    dep([
      { name: 'deploy_auth_url', value: 'http://ks' },
      { name: 'deploy_user_id', value: 'u' },
    ]),
  );
  t.equal(heat.ok, false);
  if (!heat.ok) {
    t.equal(heat.transport, 'HEAT_SIGNAL');
    t.match(heat.reason, 'deploy_password, deploy_project_id, deploy_stack_id, deploy_resource_name');
  }
  const zaqar = signalTargetFor(dep([{ name: 'deploy_queue_id', value: 'q' }]));
  t.ok(!zaqar.ok && zaqar.transport === 'ZAQAR_SIGNAL' && zaqar.reason.includes('deploy_auth_url'));
});

t.test('a resource named "." or "..": refused, its signal address would be another one', async (t) => {
  const heat = (name: string) =>
    signalTargetFor(
      dep([...ks, { name: 'deploy_stack_id', value: 's/1' }, { name: 'deploy_resource_name', value: name }]),
    );
  for (const name of ['.', '..']) {
    const refused = heat(name);
    t.equal(refused.ok, false, name);
    if (!refused.ok) t.match(refused.reason, `deploy_resource_name "${name}" cannot be written in a URL path`);
  }
  t.equal(heat('...').ok, true, 'three dots are a name like any other');
  t.equal(heat('.a').ok, true);
});
