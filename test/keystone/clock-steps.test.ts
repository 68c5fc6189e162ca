import t from 'tap';
import { createHttpClient } from '../../src/http/client.js';
import { KeystoneSession } from '../../src/keystone/keystone-client.js';
import { scrubText } from '../../src/log/redact.js';
import { startKeystoneServer, type KeystoneServer } from '../helpers/keystone-server.js';
import { captureLog } from '../helpers/log-capture.js';

// Keystone tokens under steps of the wall clock, both ways: a token is reused for its lifetime by Keystone's own
// issued_at..expires_at, timed on the monotonic clock from when it arrived; a cached token written while the clock
// was ahead is not trusted; a token in use stays scrubbed from logs whatever the clock says.

const HOUR = 3600_000;
const YEAR = 365 * 24 * HOUR;

let ks: KeystoneServer;
t.before(async () => {
  ks = await startKeystoneServer();
});
t.teardown(() => ks.close());

function session(clock: { wall: number; mono: number }, cacheDir?: string) {
  return new KeystoneSession(
    createHttpClient({ defaultMaxBytes: 1 << 20, defaultRetries: 0 }),
    { authUrl: ks.authUrl, userId: ks.userId, password: ks.password, projectId: ks.projectId },
    {
      timeoutSeconds: 5,
      now: () => clock.wall,
      monotonic: () => clock.mono,
      log: captureLog().log,
      ...(cacheDir ? { cache: { dir: cacheDir, ttlSeconds: 1800 } } : {}),
    },
  );
}

t.test('clock stepped back a year: the token is still renewed when its hour is up', async (t) => {
  const clock = { wall: Date.now(), mono: 0 };
  const s = session(clock);
  const issued = ks.tokensIssued();
  const first = await s.token();
  clock.wall -= YEAR;
  clock.mono += 10 * 60_000;
  t.equal(await s.token(), first, 'ten minutes later: reused');
  clock.mono += HOUR;
  const second = await s.token();
  t.not(
    second.token,
    first.token,
    'an hour later by the monotonic clock: renewed, though the wall clock says a year before expiry',
  );
  t.equal(ks.tokensIssued(), issued + 2);
});

t.test('clock stepped forward a year: the token is reused, and stays scrubbed', async (t) => {
  const clock = { wall: Date.now(), mono: 0 };
  const s = session(clock);
  const issued = ks.tokensIssued();
  const first = await s.token();
  clock.wall += YEAR;
  clock.mono += 60_000;
  t.equal((await s.token()).token, first.token, 'a minute later: reused, not a login per request');
  t.equal(ks.tokensIssued(), issued + 1);
  t.equal(scrubText(`token ${first.token}`), 'token [REDACTED]', 'the token in use is still a registered secret');
});

t.test('a cached token stored while the clock was ahead is not reused after the clock steps back', async (t) => {
  const dir = t.testdir();
  const ahead = { wall: Date.now() + YEAR, mono: 0 };
  await session(ahead, dir).token();
  const issued = ks.tokensIssued();
  const now = { wall: Date.now(), mono: 0 };
  await session(now, dir).token();
  t.equal(ks.tokensIssued(), issued + 1, 'logged in again instead of trusting an age and expiry from the future');
});
