import t from 'tap';
import { keystoneSessionFor, loginFailure } from '../../../src/signals/transports/keystone-sessions.js';
import { KeystoneError } from '../../../src/keystone/keystone-client.js';
import { createHttpClient } from '../../../src/http/client.js';
import { startKeystoneServer } from '../../helpers/keystone-server.js';

// Keystone sessions per deployment user, and which login failures are final.

t.test('one session per user, reused; a different user gets its own', async (t) => {
  const ks = await startKeystoneServer();
  t.teardown(() => ks.close());
  const http = createHttpClient({ defaultMaxBytes: 1 << 20, defaultRetries: 0 });
  const creds = { authUrl: ks.authUrl, userId: ks.userId, password: ks.password, projectId: ks.projectId };
  const a = keystoneSessionFor(http, creds, 2);
  t.equal(keystoneSessionFor(http, creds, 2), a);
  t.not(keystoneSessionFor(http, { ...creds, userId: 'other' }, 2), a);
  await a.token();
  await keystoneSessionFor(http, creds, 2).token();
  t.equal(ks.tokensIssued(), 1);
  for (let i = 0; i < 70; i++) keystoneSessionFor(http, { ...creds, userId: `u${i}` }, 2);
  t.not(keystoneSessionFor(http, creds, 2), a, 'the oldest users are forgotten past the limit');
});

t.test('loginFailure: refused credentials are final, the rest retried', async (t) => {
  const ks = await startKeystoneServer();
  t.teardown(() => ks.close());
  const http = createHttpClient({ defaultMaxBytes: 1 << 20, defaultRetries: 0 });
  const refused = await keystoneSessionFor(
    http,
    { authUrl: ks.authUrl, userId: ks.userId, password: 'wrong', projectId: ks.projectId },
    2,
  )
    .token()
    .catch((e: unknown) => e);
  t.same(loginFailure(refused, 'Heat signal').outcome, 'final');
  t.equal(loginFailure(refused, 'Heat signal').status, 401);
  ks.fault = '500';
  const broken = await keystoneSessionFor(
    http,
    { authUrl: ks.authUrl, userId: 'x5', password: 'p', projectId: ks.projectId },
    2,
  )
    .token()
    .catch((e: unknown) => e);
  t.equal(loginFailure(broken, 'S').outcome, 'retry');
  t.equal(
    loginFailure(new KeystoneError('no public "orchestration" endpoint in the Keystone catalog'), 'S').outcome,
    'retry',
  );
  t.equal(loginFailure(new Error('socket hang up'), 'S').outcome, 'retry');
  // The status comes from the error's field: a message that merely looks like one is not read (it used to be).
  t.equal(
    loginFailure(new KeystoneError('Keystone at http://h/(403)/ answered 404; check auth_url'), 'S').outcome,
    'retry',
  );
  t.match(loginFailure(new KeystoneError('Keystone refused', { statusCode: 403 }), 'S'), {
    outcome: 'final',
    status: 403,
    error: 'S: Keystone refused',
  });
  t.equal(loginFailure('weird', 'S').outcome, 'retry');
});
