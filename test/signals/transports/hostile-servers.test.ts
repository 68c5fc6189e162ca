import t from 'tap';
import { createHttpClient } from '../../../src/http/client.js';
import { KeystoneSession } from '../../../src/keystone/keystone-client.js';
import { sendOnce } from '../../../src/signals/transports/delivery.js';
import { failure } from '../../helpers/assertions.js';
import { startHostileServer, type HostileBehaviour } from '../../helpers/hostile-server.js';
import { captureLog } from '../../helpers/log-capture.js';

// A signal request and the Keystone login before it, against servers that misbehave on purpose
// (test/helpers/hostile-server.ts): each attempt ends within its timeout as a retry (the answer never arrived whole)
// or a final failure, never a hang and never "sent".

const BEHAVIOURS: ReadonlyArray<[string, HostileBehaviour, 'http' | 'https']> = [
  ['a trickled answer', { kind: 'trickle', bytes: 100, everyMs: 100 }, 'http'],
  ['a reset mid-answer', { kind: 'reset-mid-body', declared: 1000, sent: 10 }, 'http'],
  ['a lying Content-Length', { kind: 'wrong-length', declared: 1000, sent: 10 }, 'http'],
  ['endless headers', { kind: 'endless-headers', everyMs: 1, maxLines: 2000 }, 'http'],
  ['a redirect loop', { kind: 'redirect-loop' }, 'http'],
  ['a gigabyte answer', { kind: 'huge-body', totalBytes: 1024 ** 3 }, 'http'],
  ['a TLS handshake that never finishes', { kind: 'silent' }, 'https'],
];

for (const [name, behaviour, scheme] of BEHAVIOURS) {
  t.test(`signal and Keystone login against ${name}`, async (t) => {
    const server = await startHostileServer(behaviour);
    t.teardown(() => server.close());
    const url = server.url.replace('http:', `${scheme}:`);
    const http = createHttpClient({ defaultMaxBytes: 64 * 1024, defaultRetries: 0 });
    const out = await sendOnce(
      { http, log: captureLog().log, timeoutSeconds: 0.5, now: Date.now },
      { url: `${url}/signal`, method: 'POST', body: '{"deploy_status_code": 0}' },
      'Signal',
    );
    t.not(out.outcome, 'sent', `${name}: ${out.outcome === 'sent' ? '' : out.error}`);
    const session = new KeystoneSession(
      http,
      { authUrl: `${url}/identity/v3`, userId: 'u', password: 'secret-pw', projectId: 'p' },
      { timeoutSeconds: 0.5 },
    );
    const err = await failure(session.token());
    t.match(err.message, /Keystone/);
    t.notMatch(err.message, /secret-pw/);
  });
}
