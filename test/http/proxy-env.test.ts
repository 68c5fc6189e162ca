import t from 'tap';
import { resolveProxySettings, routeFor, type ProxyInputs, type ProxyRoute } from '../../src/http/proxy-env.js';
import { scrubText, secrets } from '../../src/log/redact.js';

// The proxy decision for one URL: which setting wins (option over lower-case over upper-case variable), which
// proxy a scheme uses, no_proxy, the metadata addresses that never go through a proxy, and unusable settings.

const P = 'http://proxy.test:3128';
const S = 'http://secure-proxy.test:3129';

function route(inputs: Partial<ProxyInputs>, url: string): string {
  const r: ProxyRoute = routeFor(resolveProxySettings({ config: inputs.config ?? {}, env: inputs.env ?? {} }), url);
  if (r.kind === 'direct') return 'direct';
  if (r.kind === 'invalid') return `invalid: ${r.problem.problem}`;
  return `${r.proxy.shown} (${r.proxy.source})`;
}

t.test('http: URLs use the http proxy, https: URLs the https proxy; neither falls back on the other', async (t) => {
  const env = { http_proxy: P, https_proxy: S };
  t.equal(route({ env }, 'http://heat.test:8000/v1/'), 'http://proxy.test:3128 (the http_proxy environment variable)');
  t.equal(
    route({ env }, 'https://heat.test:8000/v1/'),
    'http://secure-proxy.test:3129 (the https_proxy environment variable)',
  );
  t.equal(route({ env: { http_proxy: P } }, 'https://heat.test/'), 'direct');
  t.equal(route({ env: { https_proxy: S } }, 'http://heat.test/'), 'direct');
  t.equal(route({ env }, 'ftp://files.test/'), 'direct', 'other schemes are not proxied');
  t.equal(route({ env }, 'not a url'), 'direct', 'a URL the parser refuses fails later, as before');
});

t.test('precedence: [agent] option, then the lower-case variable, then the upper-case one', async (t) => {
  const url = 'http://heat.test/';
  t.equal(route({ env: { HTTP_PROXY: P } }, url), 'http://proxy.test:3128 (the HTTP_PROXY environment variable)');
  t.equal(
    route({ env: { HTTP_PROXY: 'http://upper.test:1', http_proxy: P } }, url),
    'http://proxy.test:3128 (the http_proxy environment variable)',
  );
  t.equal(
    route({ env: { HTTP_PROXY: P, http_proxy: '' } }, url),
    'direct',
    'an empty lower-case variable hides the upper-case one',
  );
  t.equal(
    route({ config: { http_proxy: 'http://option.test:8080' }, env: { http_proxy: P } }, url),
    'http://option.test:8080 (the [agent] http_proxy option)',
  );
  t.equal(
    route({ config: { http_proxy: '' }, env: { http_proxy: P, HTTP_PROXY: P } }, url),
    'direct',
    'an empty option turns the proxy off',
  );
  t.equal(route({ config: { http_proxy: '  ' }, env: { http_proxy: P } }, url), 'direct', 'white space only is empty');
  t.equal(
    route({ config: { no_proxy: 'other.test' }, env: { http_proxy: P, no_proxy: 'heat.test' } }, url),
    'http://proxy.test:3128 (the http_proxy environment variable)',
    'the no_proxy option replaces the variable',
  );
  t.equal(route({ env: { http_proxy: P, NO_PROXY: 'heat.test' } }, url), 'direct', 'NO_PROXY is read');
  t.equal(
    route({ env: { http_proxy: P, NO_PROXY: 'heat.test', no_proxy: 'other.test' } }, url),
    'http://proxy.test:3128 (the http_proxy environment variable)',
    'no_proxy wins over NO_PROXY',
  );
});

t.test(
  'proxy URL forms: scheme optional (http), https proxies, default ports, credentials never in `shown`',
  async (t) => {
    const url = 'http://heat.test/';
    t.equal(
      route({ env: { http_proxy: 'proxy.test:3128' } }, url),
      'http://proxy.test:3128 (the http_proxy environment variable)',
    );
    t.equal(
      route({ env: { http_proxy: 'proxy.test' } }, url),
      'http://proxy.test (the http_proxy environment variable)',
      'port 80',
    );
    t.equal(
      route({ env: { http_proxy: 'https://proxy.test' } }, url),
      'https://proxy.test (the http_proxy environment variable)',
      'a TLS proxy',
    );
    t.equal(
      route({ env: { http_proxy: 'http://[fd00::3]:3128' } }, url),
      'http://[fd00::3]:3128 (the http_proxy environment variable)',
    );
    const settings = resolveProxySettings({
      config: {},
      env: { http_proxy: 'http://us%40er:p%3Ass@proxy.test:3128/' },
    });
    const r = routeFor(settings, url);
    t.equal(r.kind === 'proxy' && r.proxy.shown, 'http://proxy.test:3128');
    t.equal(r.kind === 'proxy' && r.proxy.hasCredentials, true);
  },
);

t.test(
  'unusable settings: every request that would use them is refused with a message naming the setting, never the value',
  async (t) => {
    const url = 'https://heat.test/';
    for (const [value, wanted] of [
      [
        'http://user:secret-one@[bad',
        /^invalid: the https_proxy environment variable is not a valid proxy URL \(expected http:\/\/\[user:password@\]host\[:port\]\); fix or unset it$/,
      ],
      [
        'socks5://user:secret-two@proxy.test:1080',
        /^invalid: the https_proxy environment variable names a socks5 proxy, which is not supported/,
      ],
      ['http://:3128', /not a valid proxy URL/],
    ] as const) {
      const text = route({ env: { https_proxy: value } }, url);
      t.match(text, wanted, value);
      t.notMatch(text, /secret/);
    }
    t.equal(
      route({ env: { https_proxy: 'socks5://x:1', no_proxy: 'heat.test' } }, url),
      'direct',
      'an exempt host never needs the proxy',
    );
    t.equal(
      route({ env: { https_proxy: 'socks5://x:1' } }, 'http://heat.test/'),
      'direct',
      'the other scheme is unaffected',
    );
  },
);

t.test(
  'metadata addresses go direct whatever no_proxy says; loopback goes through the proxy unless listed',
  async (t) => {
    const env = { http_proxy: P, https_proxy: S };
    for (const url of [
      'http://169.254.169.254/latest/meta-data',
      'http://[fe80::a9fe:a9fe%25eth0]/openstack',
      'http://[fd00:ec2::254]/latest',
      'https://169.254.1.1/',
      'http://[::ffff:169.254.169.254]/',
    ]) {
      t.equal(route({ env }, url), 'direct', url);
    }
    t.equal(
      route({ env }, 'http://127.0.0.1:8000/'),
      'http://proxy.test:3128 (the http_proxy environment variable)',
      'loopback: as python-requests',
    );
    t.equal(route({ env }, 'http://localhost/'), 'http://proxy.test:3128 (the http_proxy environment variable)');
    t.equal(route({ env: { ...env, no_proxy: 'localhost,127.0.0.0/8,::1' } }, 'http://127.0.0.1:8000/'), 'direct');
    t.equal(route({ env: { ...env, no_proxy: 'localhost,127.0.0.0/8,::1' } }, 'http://[::1]:8000/'), 'direct');
    t.equal(
      route({ env }, 'http://metadata.test/'),
      'http://proxy.test:3128 (the http_proxy environment variable)',
      'names are not resolved to find metadata addresses',
    );
  },
);

t.test('malformed no_proxy entries are reported with their source; the others apply', async (t) => {
  const settings = resolveProxySettings({
    config: {},
    env: { http_proxy: P, no_proxy: 'ok.test, 10.0.0.0/99, bad..name' },
  });
  t.same(settings.malformedNoProxy, ['10.0.0.0/99', 'bad..name']);
  t.equal(settings.noProxySource, 'the no_proxy environment variable');
  t.equal(routeFor(settings, 'http://ok.test/').kind, 'direct');
});

t.test('proxy passwords are scrubbed from log text as soon as the settings are read, in every form', async (t) => {
  t.teardown(() => secrets.clear());
  resolveProxySettings({ config: { https_proxy: 'bob:S3cret%2Fpw@proxy.test:3128' }, env: {} });
  const basic = Buffer.from('bob:S3cret/pw').toString('base64');
  t.equal(scrubText('value S3cret%2Fpw and S3cret/pw and ' + basic), 'value [REDACTED] and [REDACTED] and [REDACTED]');
});
