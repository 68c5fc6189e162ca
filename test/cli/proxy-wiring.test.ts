import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { runBundle } from '../helpers/bundle.js';
import { startTestServer } from '../helpers/http-test-server.js';
import { startTinyproxy, tinyproxyMissing } from '../helpers/tinyproxy.js';

// The command line hands the proxy settings to the HTTP client: the real bundle's `collect --print` with the
// `request` collector, http_proxy in its environment, Debian's tinyproxy on loopback. The option beats the variable;
// the proxy password shows nowhere, even with DEBUG=* (the bundle has no `debug` traces).

/** `collect --print` of the bundle under `root`, with only PATH and `env` in its environment. */
const collect = (root: string, env: Record<string, string>) =>
  runBundle(['collect', '--root', root, '--print'], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env } });

t.test(
  'collect honours http_proxy from the environment, and [agent] http_proxy over it',
  { skip: tinyproxyMissing() },
  async (t) => {
    const origin = await startTestServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"from": "origin"}');
    });
    t.teardown(() => origin.close());
    // Not under t.testdir(), which empties its directory on every call.
    const proxyDir = mkdtempSync(path.join(os.tmpdir(), 'oca-tinyproxy-'));
    t.teardown(() => rmSync(proxyDir, { recursive: true, force: true }));
    const proxy = await startTinyproxy(proxyDir);
    t.teardown(() => proxy.stop());

    const conf = (agent: string) =>
      `[DEFAULT]\ncollectors = request\n[request]\nmetadata_url = ${origin.url}/doc\n[agent]\n${agent}`;
    const viaEnv = t.testdir({ etc: { 'os-collect-config.conf': conf('') } });
    // With credentials (tinyproxy without BasicAuth ignores them) and every `debug` trace asked for: no output shows them.
    const first = await collect(viaEnv, { http_proxy: proxy.url.replace('//', '//agent:pr0xy-secret@'), DEBUG: '*' });
    t.equal(first.code, 0, first.stderr);
    t.notMatch(first.stdout + first.stderr, /pr0xy-secret/, 'the proxy password is in no output');
    t.match(JSON.parse(first.stdout), { request: { from: 'origin' } });
    t.same(proxy.requests(), [`GET ${origin.url}/doc HTTP/1.1`], 'the request went through tinyproxy');

    const optionOff = t.testdir({ etc: { 'os-collect-config.conf': conf('http_proxy =\n') } });
    const second = await collect(optionOff, { http_proxy: proxy.url });
    t.equal(second.code, 0, second.stderr);
    t.equal(proxy.requests().length, 1, 'an empty [agent] http_proxy: direct');
    t.equal(origin.requests.length, 2);
  },
);
