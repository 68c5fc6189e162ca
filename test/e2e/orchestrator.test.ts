import t from 'tap';
import { signV2 } from '../helpers/orchestrator/sigv2.js';
import { startOrchestrator } from '../helpers/orchestrator/orchestrator.js';
import { tempUrl } from '../helpers/orchestrator/tempurl.js';

// The simulated orchestrator must check requests as the real services do, or the end-to-end tests prove nothing.

t.test('SigV2 matches the reference vector observed against the upstream signer', async (t) => {
  const sig = signV2('FEDCBA9876543210', 'GET', '192.0.2.1:8000', '/v1/', {
    Action: 'DescribeStackResource',
    StackName: 'foo',
    LogicalResourceId: 'res1',
    AWSAccessKeyId: '0123456789ABCDEF',
    SignatureVersion: '2',
    SignatureMethod: 'HmacSHA256',
  });
  t.equal(sig, 'EtB3VB56qmgTVU8/WfD/btd3VLy4FWLA/tW0yLD9nC0=');
});

t.test('cfn: a correct signature gets the metadata, a wrong secret gets 403', async (t) => {
  const o = await startOrchestrator({ transport: 'POLL_SERVER_CFN' });
  t.teardown(() => o.close());
  o.addDeployment({ name: 'd1', group: 'script', config: '#!/bin/sh\n' });
  const ask = (secret: string) => {
    const params: Record<string, string> = {
      Action: 'DescribeStackResource',
      StackName: o.stackName,
      LogicalResourceId: 'server',
      AWSAccessKeyId: o.creds.cfnAccessKey,
      SignatureVersion: '2',
      SignatureMethod: 'HmacSHA256',
    };
    params.Signature = signV2(secret, 'GET', o.host, '/v1/', params);
    return fetch(`${o.url}/v1/?${new URLSearchParams(params)}`);
  };
  const good = await ask(o.creds.cfnSecret);
  t.equal(good.status, 200);
  t.match(await good.text(), /<Metadata>.*deployments/);
  t.equal((await ask('wrong-secret')).status, 403);
});

t.test('signals: CFN pre-signed URL checked; TempURL PUT checked; tampered URLs refused', async (t) => {
  const o = await startOrchestrator({ transport: 'POLL_TEMP_URL' });
  t.teardown(() => o.close());
  const cfnId = o.addDeployment({ name: 'c', group: 'script', config: '', signal: 'CFN_SIGNAL' });
  const tuId = o.addDeployment({ name: 'u', group: 'script', config: '', signal: 'TEMP_URL_SIGNAL' });
  const deps = o.metadata().deployments as Array<{ id: string; inputs: Array<{ name: string; value: string }> }>;
  const signalUrl = (id: string) =>
    deps.find((d) => d.id === id)!.inputs.find((i) => i.name === 'deploy_signal_id')!.value;
  t.equal((await fetch(signalUrl(cfnId), { method: 'POST', body: '{"deploy_status_code":0}' })).status, 200);
  t.equal(
    (await fetch(signalUrl(cfnId).replace(/Signature=[^&]+/, 'Signature=AAAA'), { method: 'POST', body: '{}' })).status,
    403,
  );
  t.equal((await fetch(signalUrl(tuId), { method: 'PUT', body: '{"deploy_status_code":1}' })).status, 201);
  t.equal(
    (
      await fetch(signalUrl(tuId).replace(/temp_url_sig=[0-9a-f]{4}/, 'temp_url_sig=0000'), {
        method: 'PUT',
        body: '{}',
      })
    ).status,
    401,
  );
  t.same(
    o.signals.map((s) => [s.deploymentId, s.transport, s.body.deploy_status_code]),
    [
      [cfnId, 'CFN_SIGNAL', 0],
      [tuId, 'TEMP_URL_SIGNAL', 1],
    ],
  );
  const expired = tempUrl(o.url, o.creds.swiftKey, 'GET', '/swift/v1/x', Math.floor(Date.now() / 1000) - 10);
  t.equal((await fetch(expired)).status, 401, 'expired TempURL refused');
});

t.test('Keystone + Heat: token required and renewable; metadata and signal by resource name', async (t) => {
  const o = await startOrchestrator({ transport: 'POLL_SERVER_HEAT' });
  t.teardown(() => o.close());
  const id = o.addDeployment({ name: 'h1', group: 'script', config: '', signal: 'HEAT_SIGNAL' });
  const auth = (password: string) =>
    fetch(`${o.url}/identity/v3/auth/tokens`, {
      method: 'POST',
      body: JSON.stringify({
        auth: {
          identity: { methods: ['password'], password: { user: { id: o.creds.userId, password } } },
          scope: { project: { id: o.creds.projectId } },
        },
      }),
    });
  t.equal((await auth('nope')).status, 401);
  const ok = await auth(o.creds.password);
  t.equal(ok.status, 201);
  const token = ok.headers.get('x-subject-token')!;
  const base = `${o.url}/heat/v1/${o.creds.projectId}/stacks/${o.stackName}/${o.stackId}/resources`;
  t.equal((await fetch(`${base}/server/metadata`)).status, 401, 'no token');
  const md = await fetch(`${base}/server/metadata`, { headers: { 'x-auth-token': token } });
  t.match(await md.json(), { metadata: { deployments: [{ id }] } });
  t.equal(
    (await fetch(`${base}/h1/signal`, { method: 'POST', headers: { 'x-auth-token': token }, body: '{"x":1}' })).status,
    200,
  );
  o.expireTokens();
  t.equal(
    (await fetch(`${base}/server/metadata`, { headers: { 'x-auth-token': token } })).status,
    401,
    'expired token refused',
  );
  t.equal(o.signals.length, 1);
});

t.test('TempURL metadata: ETag and Last-Modified give 304 until the metadata changes', async (t) => {
  const o = await startOrchestrator({ transport: 'POLL_TEMP_URL' });
  t.teardown(() => o.close());
  const url = (o.agentSection().request as { metadata_url: string }).metadata_url;
  const first = await fetch(url);
  t.equal(first.status, 200);
  const etag = first.headers.get('etag')!;
  t.equal((await fetch(url, { headers: { 'if-none-match': etag } })).status, 304);
  o.addDeployment({ name: 'n', group: 'script', config: '' });
  t.equal((await fetch(url, { headers: { 'if-none-match': etag } })).status, 200);
});
