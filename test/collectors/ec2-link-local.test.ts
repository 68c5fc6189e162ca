import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { STATE_FILE } from '../../src/collectors/metadata-urls.js';
import { BUNDLE } from '../helpers/bundle.js';

// OpenStack's IPv6 metadata address, fe80::a9fe:a9fe, reached over a real link: two network namespaces this test
// creates (a "cloud" and an "instance"), joined by a veth pair. The metadata server listens on fe80::a9fe:a9fe of the
// cloud's end; the bundled agent runs `collect --print ec2` inside the instance namespace with the default
// [ec2] metadata_urls, so it must expand the "%25*" zone to its interface, fail 169.254.169.254 and fd00:ec2::254 (no
// route there) and reach the link-local URL through its zone id. No traffic leaves the two namespaces.

function skipReason(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root (network namespaces)';
  if (spawnSync('sh', ['-c', 'command -v ip']).status !== 0) return 'ip is not installed (Debian: iproute2)';
  if (!existsSync(BUNDLE)) return `${BUNDLE} is missing: run "npm run build" (npm test builds it)`;
  return undefined;
}

const SERVER = `
import http from 'node:http';
const [, , zone] = process.argv;
const tree = { 'instance-id': 'i-linklocal', hostname: 'v6-only.novalocal', placement: { 'availability-zone': 'nova' } };
http.createServer((req, res) => {
  process.stdout.write(JSON.stringify({ method: req.method, url: req.url, host: req.headers.host }) + '\\n');
  if (req.url === '/latest/api/token') { res.writeHead(404); return res.end(); }
  const parts = req.url.replace(/^\\/latest\\/meta-data\\/?/, '').split('/').filter(Boolean);
  let node = tree;
  for (const p of parts) node = node && typeof node === 'object' ? node[p] : undefined;
  if (node === undefined || !req.url.startsWith('/latest/meta-data')) { res.writeHead(404); return res.end(); }
  res.writeHead(200);
  res.end(typeof node === 'string' ? node : Object.entries(node).map(([k, v]) => typeof v === 'string' ? k : k + '/').join('\\n'));
}).listen(80, 'fe80::a9fe:a9fe%' + zone, () => process.stdout.write('listening\\n'));
`;

const ip = (...args: string[]) => execFileSync('ip', args, { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });

t.test(
  'the agent reaches fe80::a9fe:a9fe on its interface (veth pair in namespaces of this test)',
  { skip: skipReason() ?? false },
  async (t) => {
    const tag = `oca${process.pid % 100000}`;
    const cloud = `${tag}s`;
    const instance = `${tag}c`;
    const [cloudIf, instanceIf] = [`${tag}s0`, `${tag}c0`];
    try {
      ip('netns', 'add', cloud);
    } catch (err) {
      t.pass(
        `SKIPPED: this kernel or container refuses network namespaces: ${String((err as { stderr?: string }).stderr ?? err).trim()}`,
      );
      return;
    }
    t.teardown(() => {
      spawnSync('ip', ['netns', 'del', cloud]);
    });
    ip('netns', 'add', instance);
    t.teardown(() => {
      spawnSync('ip', ['netns', 'del', instance]);
    });
    try {
      ip('link', 'add', instanceIf, 'netns', instance, 'type', 'veth', 'peer', 'name', cloudIf, 'netns', cloud);
    } catch (err) {
      t.pass(`SKIPPED: this kernel refuses veth pairs: ${String((err as { stderr?: string }).stderr ?? err).trim()}`);
      return;
    }
    // No duplicate address detection on the instance side: its link-local address is usable at once.
    execFileSync('ip', ['netns', 'exec', instance, 'sysctl', '-qw', `net.ipv6.conf.${instanceIf}.accept_dad=0`]);
    for (const [ns, dev] of [
      [cloud, cloudIf],
      [instance, instanceIf],
      [cloud, 'lo'],
      [instance, 'lo'],
    ] as const)
      ip('-n', ns, 'link', 'set', dev, 'up');
    ip('-n', cloud, 'addr', 'add', 'fe80::a9fe:a9fe/64', 'dev', cloudIf, 'nodad');

    const root = t.testdir();
    const script = path.join(root, 'server.mjs');
    writeFileSync(script, SERVER);
    const server: ChildProcess = spawn('ip', ['netns', 'exec', cloud, process.execPath, script, cloudIf], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    t.teardown(() => {
      server.kill('SIGKILL');
    });
    let out = '';
    server.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    for (let i = 0; i < 100 && !out.includes('listening'); i++) await sleep(100);
    t.ok(out.includes('listening'), 'metadata server up on fe80::a9fe:a9fe in the cloud namespace');
    // The instance's own link-local address must exist before it can be a source address.
    for (
      let i = 0;
      i < 50 && !/inet6 fe80::\S+ scope link\s/.test(ip('-n', instance, '-6', 'addr', 'show', 'dev', instanceIf));
      i++
    )
      await sleep(100);

    const run = spawnSync(
      'ip',
      [
        'netns',
        'exec',
        instance,
        process.execPath,
        BUNDLE,
        'collect',
        '--print',
        '--root',
        root,
        '--ec2-timeout',
        '5',
        'ec2',
      ],
      { encoding: 'utf8', timeout: 60_000 },
    );
    t.equal(run.status, 0, run.stderr);
    t.same(JSON.parse(run.stdout), {
      ec2: { 'instance-id': 'i-linklocal', hostname: 'v6-only.novalocal', placement: { 'availability-zone': 'nova' } },
    });
    // spawnSync held the event loop: the server's request log is read now (bounded).
    for (let i = 0; i < 50 && !out.includes('availability-zone'); i++) await sleep(100);
    const requests = out
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { method: string; url: string; host: string });
    t.same(
      requests[0],
      { method: 'PUT', url: '/latest/api/token', host: '[fe80::a9fe:a9fe]' },
      'the Host header carries the address without the zone',
    );
    t.ok(requests.some((r) => r.url === '/latest/meta-data/placement/availability-zone'));
    const remembered = JSON.parse(readFileSync(path.join(root, 'var/lib/os-config-agent', STATE_FILE), 'utf8')) as {
      metadata_url: string;
    };
    t.same(
      remembered,
      { metadata_url: `http://[fe80::a9fe:a9fe%25${instanceIf}]/latest/meta-data` },
      'the answering URL is remembered, zone and all',
    );
  },
);
