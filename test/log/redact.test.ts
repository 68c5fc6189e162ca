import t from 'tap';
import {
  redactFields,
  redactUrl,
  registerSecret,
  scrubText,
  scrubValue,
  secrets,
  setSecrets,
  urlCredentialSecrets,
  urlSecrets,
} from '../../src/log/redact.js';
import { isSecretName } from '../../src/log/secret-names.js';

t.afterEach(() => secrets.clear());

t.test('a registered secret is scrubbed in plain, JSON-escaped, URL-encoded and form-encoded forms', async (t) => {
  const secret = 'p@ss "w/ord"+ ü&=\\';
  registerSecret(secret);
  t.equal(scrubText(`plain ${secret} end`), 'plain [REDACTED] end');
  const jsonLine = JSON.stringify({ msg: 'x', detail: `value=${secret}` });
  t.notOk(scrubText(jsonLine).includes(JSON.stringify(secret).slice(1, -1)));
  t.match(scrubText(jsonLine), /\[REDACTED\]/);
  t.equal(scrubText(`?q=${encodeURIComponent(secret)}&x=1`), '?q=[REDACTED]&x=1');
  t.equal(scrubText(new URLSearchParams({ q: secret }).toString()), 'q=[REDACTED]');
  t.equal(JSON.parse(scrubText(jsonLine)).detail, 'value=[REDACTED]', 'the line is still valid JSON');
});

t.test('every occurrence is scrubbed, and an unregistered string is left alone', async (t) => {
  registerSecret('hunter22');
  t.equal(scrubText('hunter22 and hunter22'), '[REDACTED] and [REDACTED]');
  t.equal(scrubText('nothing secret here'), 'nothing secret here');
});

t.test('a secret containing another one is removed whole', async (t) => {
  registerSecret('abcd');
  registerSecret('abcdefgh');
  t.equal(scrubText('x abcdefgh y'), 'x [REDACTED] y', 'no tail of the longer secret is left');
  t.equal(scrubText('x abcd y'), 'x [REDACTED] y');
});

t.test('empty, short and non-string values are not registered', async (t) => {
  registerSecret(undefined);
  registerSecret(null);
  registerSecret('');
  registerSecret('abc');
  t.equal(scrubText('abc a b c'), 'abc a b c', 'three characters would redact too much ordinary text');
  registerSecret('abcd');
  t.equal(scrubText('abcd'), '[REDACTED]');
});

t.test('clearing the registry forgets everything', async (t) => {
  registerSecret('topsecret');
  secrets.clear();
  t.equal(scrubText('topsecret'), 'topsecret');
});

t.test('signature-like query parameters are scrubbed without registration', async (t) => {
  t.equal(
    scrubText(
      'GET http://h:8000/v1/signal/arn?Timestamp=1&SignatureMethod=HmacSHA256&AWSAccessKeyId=AK&SignatureVersion=2&Signature=abc%2Bdef%3D',
    ),
    'GET http://h:8000/v1/signal/arn?Timestamp=1&SignatureMethod=HmacSHA256&AWSAccessKeyId=AK&SignatureVersion=2&Signature=[REDACTED]',
  );
  t.equal(
    scrubText('https://swift/v1/AUTH_x/c/o?temp_url_sig=0123456789abcdef&temp_url_expires=2000000000'),
    'https://swift/v1/AUTH_x/c/o?temp_url_sig=[REDACTED]&temp_url_expires=2000000000',
  );
  t.equal(
    scrubText('"url":"https://s3/o?X-Amz-Signature=ff00&X-Amz-Security-Token=tok"'),
    '"url":"https://s3/o?X-Amz-Signature=[REDACTED]&X-Amz-Security-Token=[REDACTED]"',
  );
  t.equal(
    scrubText('http://h/?token=t1&password=p1&secret_access_key=k1'),
    'http://h/?token=[REDACTED]&password=[REDACTED]&secret_access_key=[REDACTED]',
  );
  t.equal(scrubText('http://h/?SIGNATURE=zz'), 'http://h/?SIGNATURE=[REDACTED]', 'parameter names match in any case');
  t.equal(
    scrubText('http://h/?SignatureMethod=HmacSHA256'),
    'http://h/?SignatureMethod=HmacSHA256',
    'only the exact parameter name',
  );
});

t.test('credential-named JSON fields are scrubbed at any depth', async (t) => {
  const line = JSON.stringify({
    a: { b: { password: 'pw "q"', secret_access_key: 'sk', deploy_signal_id: 'http://x?y', keep: 'visible' } },
    token: 't',
  });
  const out = JSON.parse(scrubText(line)) as { a: { b: Record<string, string> }; token: string };
  t.same(out.a.b, {
    password: '[REDACTED]',
    secret_access_key: '[REDACTED]',
    deploy_signal_id: '[REDACTED]',
    keep: 'visible',
  });
  t.equal(out.token, '[REDACTED]');
  t.equal(
    scrubText('{"password":"[REDACTED]"}'),
    '{"password":"[REDACTED]"}',
    'already redacted fields are left as they are',
  );
});

t.test('userinfo in URLs is scrubbed', async (t) => {
  t.equal(
    scrubText('fetching https://user:pa55@example.com/path now'),
    'fetching https://[REDACTED]@example.com/path now',
  );
  t.equal(scrubText('"http://admin@h:5000/v3"'), '"http://[REDACTED]@h:5000/v3"');
  t.equal(scrubText('http://h/path?mail=a@b.c'), 'http://h/path?mail=a@b.c', 'an @ after the host is not userinfo');
  t.equal(scrubText('mail me at a@b.c'), 'mail me at a@b.c');
});

t.test('redactUrl', async (t) => {
  t.equal(redactUrl('https://user:pw@example.com:8080/a/b?x=1'), 'https://example.com:8080/a/b?x=1');
  t.equal(
    redactUrl('http://h/o?temp_url_sig=abc&temp_url_expires=9'),
    'http://h/o?temp_url_sig=[REDACTED]&temp_url_expires=9',
  );
  t.equal(
    redactUrl('http://h/s?Signature=a%2Bb&SignatureMethod=HmacSHA256'),
    'http://h/s?Signature=[REDACTED]&SignatureMethod=HmacSHA256',
  );
  t.equal(redactUrl('http://h/s?signature=1&TOKEN=2'), 'http://h/s?signature=[REDACTED]&TOKEN=[REDACTED]');
  t.equal(
    redactUrl('http://169.254.169.254/latest/meta-data'),
    'http://169.254.169.254/latest/meta-data',
    'an ordinary URL is unchanged',
  );
  t.notOk(redactUrl('http://h/o?temp_url_sig=abc').includes('abc'));
});

t.test('redactUrl also removes registered secrets found elsewhere in the URL', async (t) => {
  registerSecret('s3cr3t-path');
  t.equal(redactUrl('http://h/v1/s3cr3t-path/x?a=s3cr3t-path'), 'http://h/v1/[REDACTED]/x?a=[REDACTED]');
});

t.test('redactUrl on something that is not a URL falls back to text scrubbing', async (t) => {
  registerSecret('zzzz-secret');
  t.equal(redactUrl('not a url zzzz-secret ?Signature=abc'), 'not a url [REDACTED] ?Signature=[REDACTED]');
  t.equal(redactUrl('plain words'), 'plain words');
});

t.test('redactFields: credential names at the top level, one level down and in headers; any value type', async (t) => {
  const fields = {
    password: 12345,
    heat: { password: { nested: 'p' }, user: 'u' },
    cfn: { secret_access_key: 'k' },
    token: ['t'],
    headers: { authorization: 'Bearer x', 'x-auth-token': 'tok', accept: 'json' },
    path: '/etc/x',
  };
  const before = JSON.stringify(fields);
  t.same(redactFields(fields), {
    password: '[REDACTED]',
    heat: { password: '[REDACTED]', user: 'u' },
    cfn: { secret_access_key: '[REDACTED]' },
    token: '[REDACTED]',
    headers: { authorization: '[REDACTED]', 'x-auth-token': '[REDACTED]', accept: 'json' },
    path: '/etc/x',
  });
  t.equal(JSON.stringify(fields), before, "the caller's object is not changed");
});

t.test('redactFields: nothing to redact gives the same object back (no copy); non-objects pass through', async (t) => {
  const fields = { path: '/etc/x', headers: { accept: 'json' }, list: [{ password: 'in a list: left to scrubText' }] };
  t.equal(redactFields(fields), fields);
  t.equal(redactFields(undefined), undefined);
  t.equal(redactFields('text'), 'text');
});

t.test('redactFields: an Error that carries a credential keeps its message and stack', async (t) => {
  const err = Object.assign(new Error('login failed'), { password: 'pw', code: 'E_AUTH' });
  const out = redactFields({ err }).err as Error & { password: string; code: string };
  t.not(out, err);
  t.equal(out.password, '[REDACTED]');
  t.equal(out.message, 'login failed');
  t.equal(out.stack, err.stack);
  t.equal(out.code, 'E_AUTH');
  t.ok(out instanceof Error);
  t.equal(err.password, 'pw', 'the original is untouched');
});

t.test(
  'urlCredentialSecrets: the password of a proxy URL, with or without a scheme, raw, decoded and as Basic',
  async (t) => {
    const urls = [
      'proxy-user:pa%24%24word@proxy.test:3128',
      'https://other:second-pw@[fd00::1]:3128/',
      'http://proxy.test:3128',
      undefined,
      'http://only-user@proxy.test',
    ];
    setSecrets('proxy settings', urls.flatMap(urlCredentialSecrets));
    t.equal(scrubText('a pa%24%24word b pa$$word c second-pw'), 'a [REDACTED] b [REDACTED] c [REDACTED]');
    t.equal(scrubText(Buffer.from('proxy-user:pa$$word').toString('base64')), '[REDACTED]');
    t.equal(scrubText('proxy.test:3128 only-user'), 'proxy.test:3128 only-user', 'no password: nothing registered');
  },
);

t.test('Authorization and Proxy-Authorization headers are scrubbed as text and as fields', async (t) => {
  t.equal(
    scrubText('sent Proxy-Authorization: Basic dXNlcjpwYXNz to the proxy'),
    'sent Proxy-Authorization: [REDACTED] to the proxy',
  );
  t.equal(
    scrubText('{"proxy-authorization":"Basic dXNlcjpwYXNz","x":1}'),
    '{"proxy-authorization":"[REDACTED]","x":1}',
  );
  t.equal(scrubText('authorization=Bearer abc.def'), 'authorization=[REDACTED]');
  t.equal(scrubText('the authorization failed'), 'the authorization failed', 'prose is left alone');
  const fields = redactFields({ headers: { 'proxy-authorization': 'Basic dXNlcjpwYXNz', accept: 'x' } });
  t.same(fields.headers, { 'proxy-authorization': '[REDACTED]', accept: 'x' });
});

// The one rule for names (secret-names.ts) in every place a name comes with a value: log fields, JSON fields in a
// line, query parameters. Before it, each place had a list of its own, and api_key or db_password passed them all.
t.test('redactFields: every name the one rule flags, at the top level and one level down', async (t) => {
  const fields = {
    api_key: 'a',
    db_password: 1,
    detail: { ssh_private_key: 'k', user: 'u' },
    credentials: { any: 'x' },
    key: 'deployments',
    deploymentKey: 'deployments',
  };
  t.same(redactFields(fields), {
    api_key: '[REDACTED]',
    db_password: '[REDACTED]',
    detail: { ssh_private_key: '[REDACTED]', user: 'u' },
    credentials: '[REDACTED]',
    key: 'deployments',
    deploymentKey: 'deployments',
  });
});

t.test('scrubText: JSON fields and query parameters named by the one rule', async (t) => {
  t.equal(
    scrubText('{"msg":"x","api_key":"a1","db_password":"p\\"q","user":"u","key":"deployments","deploymentKey":"d"}'),
    '{"msg":"x","api_key":"[REDACTED]","db_password":"[REDACTED]","user":"u","key":"deployments","deploymentKey":"d"}',
  );
  t.equal(scrubText('{"signal_url":"http://h/x"}'), '{"signal_url":"[REDACTED]"}', 'a signal URL is a credential');
  t.equal(
    scrubText('http://h/?auth_token=t1&api_key=k1&user=u&X-Auth-Token=t2&sig=s1'),
    'http://h/?auth_token=[REDACTED]&api_key=[REDACTED]&user=u&X-Auth-Token=[REDACTED]&sig=[REDACTED]',
  );
  t.equal(redactUrl('http://h/?api_key=k1&region=r'), 'http://h/?api_key=[REDACTED]&region=r');
});

t.test('isSecretName: the names of credentials, and not the names that only look like them', async (t) => {
  for (const name of [
    'password',
    'db_passwd',
    'client_secret',
    'X-Auth-Token',
    'credentials',
    'ssh_private_key',
    'api_key',
    'apiKey',
    'keys',
    'Signature',
    'X-Amz-Signature',
    'temp_url_sig',
    'proxy-authorization',
    'known_hosts',
  ])
    t.ok(isSecretName(name), name);
  for (const name of ['keystone', 'key_name', 'keyboard', 'SignatureMethod', 'SignatureVersion', 'signal', 'user_id'])
    t.notOk(isSecretName(name), name);
});

t.test('urlSecrets: the user-info password and every secret-named query parameter of a URL', async (t) => {
  t.same(urlSecrets('http://u:pw1@h/x?temp_url_sig=s1&temp_url_expires=9&token=t1'), [
    'pw1',
    'pw1',
    Buffer.from('u:pw1').toString('base64'),
    's1',
    't1',
  ]);
  t.same(urlSecrets('http://h/x?Signature=a%2Bb&SignatureMethod=HmacSHA256'), ['a+b']);
  t.same(urlSecrets(undefined), []);
  t.same(urlSecrets('not a url'), []);
});

t.test('scrubValue: every string of a value, keys and other values kept', async (t) => {
  registerSecret('sv-secret-1');
  class Exact {
    constructor(readonly text: string) {}
  }
  const exact = new Exact('sv-secret-1');
  const value = { a: ['x sv-secret-1', 1, true, null], 'sv-secret-1': { b: 'sv-secret-1' }, exact };
  const out = scrubValue(value);
  t.same(out, { a: ['x [REDACTED]', 1, true, null], 'sv-secret-1': { b: '[REDACTED]' }, exact });
  t.equal(out.exact, exact, 'an object of a class is kept as it is');
  t.equal(value.a[0], 'x sv-secret-1', 'the value given is not changed');
});

t.test('a placeholder for user-info in a message is not taken for a credential', async (t) => {
  const text = 'not a valid proxy URL (expected http://[user:password@]host[:port])';
  t.equal(scrubText(text), text);
  t.equal(scrubText('http://u:p@h/'), 'http://[REDACTED]@h/');
});
