import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { REPO, runProcess } from '../helpers/bundle.js';

// boot-config's first-boot script (boot-config/templates/fragments/install_os_config_agent_deb.sh) on this machine,
// with the values Heat's str_replace puts in: the download from a real loopback server with the real curl and
// sha256sum, and recording fakes for apt-get, systemctl and os-config-agent (installing a package here would change
// this machine; the real install in a booted system is test/image/pristine-boot.itest.ts). What it must do: install
// only what it downloaded and checked, never wait for the agent's start, never log a TempURL's signature.

const FRAGMENT = readFileSync(
  path.join(REPO, 'boot-config/templates/fragments/install_os_config_agent_deb.sh'),
  'utf8',
);
const PACKAGE = Buffer.from('!<arch>\nnot really a package, but bytes to check\n');
const SHA256 = createHash('sha256').update(PACKAGE).digest('hex');
const skip =
  spawnSync('sh', ['-c', 'command -v curl && command -v sha256sum']).status !== 0 ? 'needs curl and sha256sum' : false;

let server: http.Server;
let base = '';
const requests: string[] = [];

t.before(async () => {
  server = http.createServer((req, res) => {
    requests.push(req.url ?? '');
    if (req.url?.startsWith('/agent.deb')) res.writeHead(200, { 'content-length': PACKAGE.length }).end(PACKAGE);
    else res.writeHead(404).end('not found');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
t.teardown(() => new Promise((r) => server.close(r)));

interface Result {
  code: number | null;
  stderr: string;
  /** One line per fake command run: "apt-get install ...". */
  calls: string[];
  /** The bytes apt-get was given. */
  installed: Buffer | undefined;
  /** Temporary directories the script left in its TMP. */
  leftovers: string[];
}

/** Runs the script as Heat renders it, with the fakes first on PATH. `aptFailures`: how many installs fail first. */
async function runScript(url: string, sha256: string, aptFailures = 0): Promise<Result> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'oca-boot-config-'));
  const bin = path.join(dir, 'bin');
  const tmp = path.join(dir, 'tmp');
  spawnSync('mkdir', ['-p', bin, tmp]);
  const calls = path.join(dir, 'calls');
  writeFileSync(path.join(dir, 'apt-failures'), String(aptFailures));
  // apt-get keeps a copy of the package it is asked to install (its last argument), and fails while failures remain.
  writeFileSync(
    path.join(bin, 'apt-get'),
    `#!/bin/sh\necho "apt-get $*" >> '${calls}'\nif [ "$1" = install ]; then\n  for last; do :; done\n  cp "$last" '${dir}/installed'\n  n=$(cat '${dir}/apt-failures')\n  if [ "$n" -gt 0 ]; then echo $((n - 1)) > '${dir}/apt-failures'; exit 100; fi\nfi\nexit 0\n`,
    { mode: 0o755 },
  );
  writeFileSync(path.join(bin, 'systemctl'), `#!/bin/sh\necho "systemctl $*" >> '${calls}'\n`, { mode: 0o755 });
  writeFileSync(path.join(bin, 'os-config-agent'), `#!/bin/sh\necho "os-config-agent $*" >> '${calls}'\necho 9.9.9\n`, {
    mode: 0o755,
  });
  // As Heat's str_replace renders the template's params into the fragment; mktemp's directory moved into the test's.
  const script = FRAGMENT.replace('__OS_CONFIG_AGENT_DEB_URL__', url)
    .replace('__OS_CONFIG_AGENT_DEB_SHA256__', sha256)
    .replace('/var/tmp/os-config-agent-install.', `${tmp}/os-config-agent-install.`);
  writeFileSync(path.join(dir, 'script.sh'), script);
  const run = await runProcess('sh', [path.join(dir, 'script.sh')], {
    env: { PATH: `${bin}:/usr/sbin:/usr/bin:/sbin:/bin`, LANG: 'C.UTF-8' },
    timeoutMs: 60_000,
  });
  // What the script says goes to either stream (cloud-init keeps both): the checks read them together.
  const stderr = `${run.stdout}${run.stderr}`;
  const code = run.code;
  const read = (f: string) => {
    try {
      return readFileSync(path.join(dir, f));
    } catch {
      return undefined;
    }
  };
  const result = {
    code,
    stderr,
    calls: (read('calls')?.toString() ?? '').split('\n').filter(Boolean),
    installed: read('installed'),
    leftovers: readdirSync(tmp),
  };
  rmSync(dir, { recursive: true, force: true });
  return result;
}

t.test(
  'downloads, checks the sha256, installs the download with apt and queues the start without waiting (recording fakes for apt-get and systemctl)',
  { skip },
  async (t) => {
    requests.length = 0;
    const r = await runScript(`${base}/agent.deb`, SHA256);
    t.equal(r.code, 0, r.stderr);
    t.same(requests, ['/agent.deb'], 'one download');
    t.match(
      r.calls[0],
      /^apt-get install -y --no-install-recommends -o Dpkg::Options::=--force-confold \/.*\/os-config-agent\.deb$/,
      'apt-get installs the local file, no recommends',
    );
    t.same(r.installed, PACKAGE, 'what apt-get got is what was served');
    t.same(
      r.calls.slice(1),
      [
        'systemctl enable os-config-agent.service',
        'systemctl --no-block start os-config-agent.service',
        'os-config-agent --version',
      ],
      'enabled, start queued with --no-block (the unit is ordered after cloud-final, which runs this)',
    );
    t.match(r.stderr, /sha256 checked/);
    t.match(r.stderr, /installed 9\.9\.9; the agent starts once cloud-init has finished/);
    t.same(r.leftovers, [], 'the download is removed');
  },
);

t.test('a download that does not match the sha256 is not installed', { skip }, async (t) => {
  const r = await runScript(`${base}/agent.deb`, 'a'.repeat(64));
  t.equal(r.code, 1);
  t.match(r.stderr, /does not have the sha256 given in os_config_agent_deb_sha256 \(a{64}\); not installing it/);
  t.same(r.calls, [], 'apt-get and systemctl never ran');
  t.same(r.leftovers, [], 'the download is removed');
});

t.test('a failed download stops the script before apt', { skip }, async (t) => {
  const r = await runScript(`${base}/missing.deb`, '');
  t.not(r.code, 0);
  t.match(r.stderr, /404/, 'curl says what the server answered');
  t.same(r.calls, [], 'apt-get and systemctl never ran');
});

t.test("no sha256 given: installed unchecked; a TempURL's signature is not logged", { skip }, async (t) => {
  const r = await runScript(`${base}/agent.deb?temp_url_sig=s3cr3tsignature&temp_url_expires=1`, '');
  t.equal(r.code, 0, r.stderr);
  t.notMatch(r.stderr, /sha256 checked/);
  t.match(r.stderr, new RegExp(`downloading ${base}/agent\\.deb\\n`), 'the URL is logged without its query');
  t.notMatch(r.stderr, /s3cr3tsignature/, 'the signature is not');
  t.same(r.installed, PACKAGE);
});

t.test(
  'an install that fails for missing package lists is retried once after apt-get update (recording fake for apt-get)',
  { skip },
  async (t) => {
    const once = await runScript(`${base}/agent.deb`, SHA256, 1);
    t.equal(once.code, 0, once.stderr);
    t.same(
      once.calls.filter((c) => c.startsWith('apt-get')).map((c) => c.split(' ')[1]),
      ['install', 'update', 'install'],
    );
    const twice = await runScript(`${base}/agent.deb`, SHA256, 2);
    t.not(twice.code, 0, 'a second failure fails the script');
    t.same(
      twice.calls.filter((c) => c.startsWith('systemctl')),
      [],
      'and nothing is started',
    );
  },
);
