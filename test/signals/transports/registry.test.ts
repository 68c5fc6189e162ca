import t from 'tap';
import type { HttpClient } from '../../../src/http/types.js';
import { deliver, describeTarget } from '../../../src/signals/transports/registry.js';
import type { TargetOf, TransportName } from '../../../src/signals/transports/transport.js';
import { captureLog } from '../../helpers/log-capture.js';

// The transport table: every kind of target has its transport, and where each is shown holds none of its credentials.

const SECRETS = ['sig-SECRET-1', 'tempsig-SECRET-2', 'pw-SECRET-3', 'tok-SECRET-4', 'userinfo-SECRET-5'];
const keystone = {
  authUrl: 'http://admin:userinfo-SECRET-5@127.0.0.1:5000/v3',
  userId: 'u',
  password: 'pw-SECRET-3',
  projectId: 'p',
};

// One target of each kind; the type has a key per kind, so a new kind fails to compile until it is listed here.
const SAMPLES: { readonly [N in TransportName]: TargetOf<N> } = {
  CFN_SIGNAL: {
    transport: 'CFN_SIGNAL',
    url: 'http://127.0.0.1:8000/v1/signal/arn?SignatureVersion=2&Signature=sig-SECRET-1',
    verb: 'POST',
  },
  TEMP_URL_SIGNAL: {
    transport: 'TEMP_URL_SIGNAL',
    url: 'http://127.0.0.1:8080/v1/AUTH_x/c/o?temp_url_sig=tempsig-SECRET-2&temp_url_expires=1',
    verb: 'PUT',
  },
  HEAT_SIGNAL: { transport: 'HEAT_SIGNAL', stackId: 's/1', resourceName: 'r', ...keystone },
  ZAQAR_SIGNAL: { transport: 'ZAQAR_SIGNAL', queueId: 'q', ...keystone },
  NO_SIGNAL: { transport: 'NO_SIGNAL' },
  WAIT_CONDITION_URL: {
    transport: 'WAIT_CONDITION_URL',
    url: 'http://127.0.0.1:8000/v1/waitcondition/arn?Signature=sig-SECRET-1',
  },
  WAIT_CONDITION_TOKEN: {
    transport: 'WAIT_CONDITION_TOKEN',
    url: 'http://127.0.0.1:8004/signal',
    token: 'tok-SECRET-4',
  },
};

t.test('where a signal goes is shown without its credentials, for every kind of target', async (t) => {
  for (const target of Object.values(SAMPLES)) {
    const shown = describeTarget(target);
    t.ok(shown.length > 0, `${target.transport} is described`);
    for (const secret of SECRETS) t.notOk(shown.includes(secret), `${target.transport}: no ${secret}`);
  }
  t.match(describeTarget(SAMPLES.HEAT_SIGNAL), /stack s\/1, resource r/);
  t.match(describeTarget(SAMPLES.ZAQAR_SIGNAL), /queue q/);
});

t.test('NO_SIGNAL is settled as sent without a request', async (t) => {
  let requests = 0;
  const http: HttpClient = { request: () => Promise.reject(new Error(`request ${++requests}: none may be made`)) };
  const delivery = await deliver(SAMPLES.NO_SIGNAL, '{}', {
    http,
    log: captureLog().log,
    timeoutSeconds: 1,
    now: Date.now,
  });
  t.same(delivery, { outcome: 'sent', status: 0 });
  t.equal(requests, 0);
});
