import t from 'tap';
import { openZaqarSocket } from '../../src/http/zaqar-socket.js';
import { failure } from '../helpers/assertions.js';
import { startHostileServer, type HostileBehaviour } from '../helpers/hostile-server.js';

// Zaqar's websocket connection against servers that misbehave on purpose: the opening handshake either fails with a
// clear error or is abandoned at the timeout; it never hangs and never authenticates.

const BEHAVIOURS: ReadonlyArray<[string, HostileBehaviour, 'ws' | 'wss']> = [
  ['a server that never answers the upgrade', { kind: 'silent' }, 'ws'],
  ['a TLS handshake that never finishes', { kind: 'silent' }, 'wss'],
  // A header line every 200 ms resets an idle timeout forever; it would take minutes to reach the header size limit.
  ['headers that trickle forever', { kind: 'endless-headers', everyMs: 200, maxLines: 1000 }, 'ws'],
  ['a trickled 200 instead of an upgrade', { kind: 'trickle', bytes: 100, everyMs: 100 }, 'ws'],
  ['a redirect loop', { kind: 'redirect-loop' }, 'ws'],
  ['a gigabyte answer', { kind: 'huge-body', totalBytes: 1024 ** 3 }, 'ws'],
];

for (const [name, behaviour, scheme] of BEHAVIOURS) {
  t.test(`the Zaqar websocket against ${name}: refused within the timeout`, async (t) => {
    const server = await startHostileServer(behaviour);
    t.teardown(() => server.close());
    let tokens = 0;
    const err = await failure(
      openZaqarSocket({
        url: `${server.url.replace('http:', `${scheme}:`)}/v2`,
        projectId: 'p',
        clientId: '00000000-0000-4000-8000-000000000000',
        token: async () => {
          tokens++;
          return 'secret-token';
        },
        timeoutMs: 500,
        maxBytes: 64 * 1024,
      }),
    );
    t.match(err.name, /ZaqarSocketError/);
    if (behaviour.kind === 'silent' || behaviour.kind === 'endless-headers')
      t.match(err.message, /the opening handshake did not finish within 0\.5 s/);
    t.notMatch(err.message, /secret-token/);
    t.equal(tokens, 0, 'no token sent over a connection that never opened');
  });
}
