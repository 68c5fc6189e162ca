import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { runBundle } from '../helpers/bundle.js';
import { refusedUrl, startTestServer, type TapTest } from '../helpers/http-test-server.js';

// `os-config-agent doctor` as an operator runs it: the real bundle under --root. Exit 0 with every check ok (or
// skipped), 1 when one fails, 2 for a usage error; `--json` prints the versioned report.

function root(t: TapTest, conf: string): string {
  const dir = t.testdir();
  mkdirSync(path.join(dir, 'etc'), { recursive: true });
  writeFileSync(path.join(dir, 'etc/os-collect-config.conf'), conf, { mode: 0o600 });
  return dir;
}

const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };

t.test('doctor exits 0 when the sources answer, 1 naming the failed check, 2 on a usage error', async (t) => {
  const doc = await startTestServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
  t.teardown(() => doc.close());
  const conf = (url: string) => `[DEFAULT]\ncollectors = request\n[request]\nmetadata_url = ${url}\n`;

  const good = await runBundle(['doctor', '--root', root(t, conf(`${doc.url}/doc`)), '--json'], { env });
  t.equal(good.code, 0, good.stderr);
  const report = JSON.parse(good.stdout) as {
    version: number;
    result: string;
    checks: Array<{ id: string; verdict: string; cause: string; fix: string }>;
  };
  t.equal(report.version, 1);
  t.equal(report.result, 'ok');
  t.match(
    report.checks.find((c) => c.id === 'source.request'),
    { verdict: 'ok', cause: /answered/ },
  );

  const bad = await runBundle(['doctor', '--root', root(t, conf(`${await refusedUrl()}/doc`))], { env });
  t.equal(bad.code, 1, bad.stderr);
  t.match(
    bad.stdout,
    /^FAIL {2}source\.request .* -- check that the endpoint is up/m,
    'one line for the failed check, with its fix',
  );
  t.match(bad.stdout, /^ok {4}config /m);

  const usage = await runBundle(['doctor', '--timeout', 'soon'], { env });
  t.equal(usage.code, 2);
  t.match(usage.stderr, /--timeout/);
});
