import t from 'tap';
import { sourceErrorFromHttp } from '../../src/collectors/source-error.js';
import { SourceUnavailableError } from '../../src/errors.js';
import { HttpError } from '../../src/http/http-error.js';
import { KeystoneError } from '../../src/keystone/keystone-error.js';

// The one mapping from a failed request to a collector's source error (all six collectors that make requests use it).

t.test('an HttpError: its message, its size-cap code kept, the request error as the cause', async (t) => {
  const failed = new HttpError('request to http://h/x failed: connection refused', 'http://h/x', 'ERR_HTTP', {
    reason: 'connection refused',
  });
  const err = sourceErrorFromHttp('request', failed);
  t.type(err, SourceUnavailableError);
  t.match(err, {
    collector: 'request',
    code: 'ERR_HTTP',
    message: 'request to http://h/x failed: connection refused',
    cause: failed,
  });
  const big = new HttpError('response from http://h/x: too big', 'http://h/x', 'ERR_HTTP_TOO_LARGE', {
    reason: 'too big',
  });
  t.match(sourceErrorFromHttp('heat', big), {
    collector: 'heat',
    code: 'ERR_HTTP_TOO_LARGE',
    message: 'response from http://h/x: too big',
  });
  const proxy = new HttpError('request to http://h/x failed: the proxy refused', 'http://h/x', 'ERR_HTTP', {
    reason: 'the proxy refused',
    statusCode: 407,
  });
  t.equal(sourceErrorFromHttp('heat', proxy)?.statusCode, 407, "a proxy's refusal keeps its status");
});

t.test('a collector naming the endpoint its own way words the message from the reason (without the URL)', async (t) => {
  const failed = new HttpError(
    'request to http://h/x?Signature=abc failed: connection refused',
    'http://h/x',
    'ERR_HTTP',
    { reason: 'connection refused' },
  );
  const err = sourceErrorFromHttp('cfn', failed, { message: (reason) => `request for A.Metadata failed: ${reason}` });
  t.match(err, { code: 'ERR_HTTP', message: 'request for A.Metadata failed: connection refused' });
});

t.test('a KeystoneError is ERR_HTTP with its own message', async (t) => {
  const refused = new KeystoneError(
    'Keystone at http://k/v3/auth/tokens refused the credentials (401); check user_id, password and project_id',
    { statusCode: 401 },
  );
  t.match(sourceErrorFromHttp('zaqar', refused), {
    collector: 'zaqar',
    code: 'ERR_HTTP',
    statusCode: 401,
    message: refused.message,
    cause: refused,
  });
  t.equal(
    sourceErrorFromHttp('zaqar', new KeystoneError('Keystone authentication failed: connection refused'))?.statusCode,
    undefined,
    'no answer, no status',
  );
});

t.test('anything else is not a failed request: undefined, for the caller to rethrow', async (t) => {
  t.equal(sourceErrorFromHttp('heat', new TypeError('a bug')), undefined);
  t.equal(sourceErrorFromHttp('heat', 'weird'), undefined);
  t.equal(sourceErrorFromHttp('heat', new SourceUnavailableError('heat', 'already one')), undefined);
});
