import { randomUUID } from 'node:crypto';
import t, { type Test } from 'tap';
import type { HttpClient } from '../../src/http/types.js';
import { createHttpClient } from '../../src/http/client.js';
import { KeystoneSession, rememberedSession, type KeystoneMemory } from '../../src/keystone/keystone-client.js';
import { scrubText, secrets } from '../../src/log/redact.js';
import { captureLog } from '../helpers/log-capture.js';
import { startKeystoneServer } from '../helpers/keystone-server.js';

// The logger's secret list across a long life: every Keystone renewal replaces the token it renews, so after 10,000
// renewals a log line is checked against as many secrets as after the first (counted, not timed), and a token two
// renewals old is no longer on the list.

t.afterEach(() => secrets.clear());

/** Renew `renewals` times and check the list and the per-line cost stay where they were after the first token. */
async function renewalsKeepListBounded(
  t: Test,
  session: KeystoneSession,
  clock: { now: number },
  renewals: number,
  password: string,
): Promise<void> {
  const captured = captureLog('info');
  // What a line costs: the secret forms the scrubber is handed for it (each is compared with the line once).
  const lineCost = (line: string): number => {
    let handed = 0;
    const forms = secrets.forms;
    secrets.forms = function (this: typeof secrets) {
      const list = forms.call(this);
      handed += list.length;
      return list;
    };
    try {
      captured.log.info({ line }, 'probe');
    } finally {
      secrets.forms = forms;
    }
    return handed;
  };
  const first = await session.token();
  const firstCost = lineCost(`${first.token} ${password}`);
  const firstSize = secrets.size;
  t.ok(firstCost > 0 && firstCost === firstSize, 'a line is checked against each registered form once');
  const seen: string[] = [first.token];
  let largest = firstSize;
  let current = first;
  for (let i = 1; i <= renewals; i++) {
    // The session's clock a token's lifetime (an hour) less 30 s later: due for renewal (a minute's margin) and the
    // token still valid, so the renewal keeps the replaced token on the list until it expires. The session times a
    // token's reuse from when it got it, by Keystone's issued_at..expires_at span, not by our clock reading expires_at.
    clock.now += 3600_000 - 30_000;
    current = await session.token();
    seen.push(current.token);
    largest = Math.max(largest, secrets.size);
  }
  t.equal(new Set(seen).size, renewals + 1, 'every round was a renewal');
  t.ok(
    largest <= firstSize * 3,
    `the list never grew past the password and two tokens (largest ${largest}, first ${firstSize})`,
  );
  const lastCost = lineCost(`${current.token} ${seen.at(-2)} ${password}`);
  t.ok(
    lastCost <= firstSize * 3,
    `a line after ${renewals} renewals costs ${lastCost} comparisons (after the first: ${firstCost})`,
  );
  const text = captured.text();
  t.notOk(text.includes(current.token), 'the current token is scrubbed');
  t.notOk(text.includes(seen.at(-2)!), 'the token it replaced, not yet expired, is scrubbed');
  t.notOk(text.includes(password), 'the password is scrubbed');
  t.equal(scrubText(`x ${seen[0]}`), `x ${seen[0]}`, 'a token renewed long ago is off the list');

  // Invalidated (the service refused it) and closed: nothing of the session is left.
  session.invalidate();
  t.equal(scrubText(`x ${current.token}`), `x ${current.token}`, 'a refused token is released');
  session.close();
  t.equal(secrets.size, 0, 'a closed session leaves nothing on the list');
}

t.test(
  '10,000 token renewals keep the secret list, and the work per log line, bounded (Keystone is an in-process fake HttpClient: 10,000 loopback logins take minutes here)',
  async (t) => {
    let issued = 0;
    const password = 'fake-keystone-password';
    const fake: HttpClient = {
      async request(req) {
        // What Keystone checks of a password login, then a fresh token for an hour.
        const auth = JSON.parse(String(req.body)) as {
          auth: { identity: { password: { user: { password: string } } } };
        };
        if (
          req.method !== 'POST' ||
          !req.url.endsWith('/v3/auth/tokens') ||
          auth.auth.identity.password.user.password !== password
        ) {
          return { statusCode: 401, headers: {}, body: Buffer.from('{}'), redactedUrl: req.url };
        }
        issued++;
        const body = JSON.stringify({
          token: { expires_at: new Date(clock.now + 3600_000).toISOString(), catalog: [] },
        });
        return {
          statusCode: 201,
          headers: { 'x-subject-token': `gAAAAAfake${issued}-${randomUUID()}` },
          body: Buffer.from(body),
          redactedUrl: req.url,
        };
      },
    };
    const clock = { now: Date.now() };
    const session = new KeystoneSession(
      fake,
      { authUrl: 'http://keystone.test/v3', userId: 'u', password, projectId: 'p' },
      { timeoutSeconds: 5, now: () => clock.now },
    );
    await renewalsKeepListBounded(t, session, clock, 10_000, password);
    t.equal(issued, 10_001);
  },
);

t.test('token renewals against a real Keystone server: the same bound', async (t) => {
  const ks = await startKeystoneServer();
  t.teardown(() => ks.close());
  const http = createHttpClient({ defaultMaxBytes: 1 << 20, defaultRetries: 0 });
  const clock = { now: Date.now() };
  const session = new KeystoneSession(
    http,
    { authUrl: ks.authUrl, userId: ks.userId, password: ks.password, projectId: ks.projectId },
    { timeoutSeconds: 5, now: () => clock.now },
  );
  await renewalsKeepListBounded(t, session, clock, 100, ks.password);
  t.equal(ks.tokensIssued(), 101);
});

t.test("a reconfigured source: the session made for new credentials releases the old one's password", async (t) => {
  const ks = await startKeystoneServer();
  t.teardown(() => ks.close());
  const http = createHttpClient({ defaultMaxBytes: 1 << 20, defaultRetries: 0 });
  const memory: KeystoneMemory = {};
  const creds = { authUrl: ks.authUrl, userId: ks.userId, password: 'old-password-1', projectId: ks.projectId };
  rememberedSession(memory, http, creds, { timeoutSeconds: 5 });
  t.equal(scrubText('x old-password-1'), 'x [REDACTED]');
  rememberedSession(memory, http, { ...creds, password: ks.password }, { timeoutSeconds: 5 });
  t.equal(scrubText('x old-password-1'), 'x old-password-1', 'released with the session it belonged to');
  t.equal(scrubText(`x ${ks.password}`), 'x [REDACTED]');
});
