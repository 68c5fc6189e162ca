import t from 'tap';
import { runBundle, type BundleRun } from '../helpers/bundle.js';
import { makeAgentRoot } from '../helpers/agent-root.js';
import { startKeystoneServer } from '../helpers/keystone-server.js';
import { startZaqarWsServer } from '../helpers/zaqar-ws-server.js';

// The built bundle (ws in its own lazily loaded chunk) as an instance runs it: `collect` with the zaqar collector over
// websockets prints the popped metadata and exits by itself, the kept connection holding nothing open.

function run(args: string[]): Promise<BundleRun> {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  // Bounded: a process kept alive by its socket fails the test instead of hanging it.
  return runBundle(args, { env, timeoutMs: 30_000 });
}

t.test('collect over websockets with the bundle: prints the message and exits', async (t) => {
  const ks = await startKeystoneServer();
  t.teardown(() => ks.close());
  const zaqar = await startZaqarWsServer(ks);
  t.teardown(() => zaqar.close());
  ks.catalog = [{ type: 'messaging-websocket', endpoints: [{ interface: 'public', url: zaqar.endpoint }] }];
  zaqar.post('q-bundle', { app: { port: 8080 } });
  const agent = makeAgentRoot(
    t.testdir(),
    [
      '[DEFAULT]',
      'collectors = zaqar',
      '[zaqar]',
      `auth_url = ${ks.authUrl}`,
      `user_id = ${ks.userId}`,
      `password = ${ks.password}`,
      `project_id = ${ks.projectId}`,
      'queue_id = q-bundle',
      'use_websockets = true',
      'timeout = 5',
      '',
    ].join('\n'),
  );
  const res = await run(['collect', '--print', '--root', agent.root]);
  t.equal(res.code, 0, res.stderr);
  t.same(JSON.parse(res.stdout), { zaqar: { app: { port: 8080 } } });
  t.same(
    zaqar.frames.map((f) => f.action),
    ['authenticate', 'queue_create', 'subscription_create', 'message_delete_many'],
  );
  t.notOk(res.stderr.includes(ks.password), 'no password on stderr');
});
