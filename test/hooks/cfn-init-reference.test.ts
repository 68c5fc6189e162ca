import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { startTestServer } from '../helpers/http-test-server.js';
import { SCRATCH_ROOT_MOUNTS, SCRATCH_ROOT_RUN } from '../helpers/scratch-root.js';
import { HOOKS_DIR } from './hook-process.js';

// The same AWS::CloudFormation::Init metadata applied by Debian's heat-cfntools cfn-init and by our hook, each in a
// scratch root: a private mount namespace (unshare --mount) with an overlay whose lower layer is this machine's / and
// whose upper layer is a fresh tmpfs, entered with chroot. Users, groups and the apt package are real changes inside
// that root only. Afterwards the two upper layers (every file's type, mode, owner, link target and content), the
// passwd and group files and the order in which the commands ran must be the same.

const CFN_INIT = '/usr/bin/cfn-init';
const HOOK = path.join(HOOKS_DIR, 'cfn-init');
const PACKAGE = 'hello';

function whyNot(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root (mount namespaces, overlayfs, chroot)';
  if (!existsSync(CFN_INIT)) return `${CFN_INIT} is missing: apt-get install heat-cfntools`;
  if (!existsSync(HOOK)) return `${HOOK} is missing: npm run build`;
  if (!existsSync('/usr/bin/curl')) return 'heat-cfntools fetches sources with curl: apt-get install curl';
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cfn-init-overlay-probe-'));
  const probe = spawnSync(
    'unshare',
    [
      '--mount',
      '--fork',
      'sh',
      '-c',
      'mount --make-rprivate / && mount -t tmpfs t "$1" && ' +
        'mkdir "$1/u" "$1/w" "$1/m" && mount -t overlay o -o "lowerdir=/,upperdir=$1/u,workdir=$1/w" "$1/m"',
      'probe',
      dir,
    ],
    { timeout: 20_000 },
  );
  rmSync(dir, { recursive: true, force: true });
  if (probe.status !== 0)
    return `no overlay scratch root here: ${probe.stderr?.toString().trim() || probe.error?.message}`;
  return undefined;
}

// Runs in its own mount namespace: the tmpfs, overlay and binds vanish with it.
const SCRATCH = `
set -eu
S=$1; SIDE=$2; SHARE=$3; OUT=$4; NODE=$5
${SCRATCH_ROOT_MOUNTS}
mkdir "$S/m/tmp/share"
mount --bind "$SHARE" "$S/m/tmp/share"
for deb in "$SHARE"/*.deb; do
  [ -e "$deb" ] && mkdir -p "$S/m/var/cache/apt/archives" && cp "$deb" "$S/m/var/cache/apt/archives/"
done
${SCRATCH_ROOT_RUN}
status=0
if [ "$SIDE" = ours ]; then
  run "$NODE" /tmp/share/cfn-init < "$SHARE/deployment.json" > "$OUT/result.json" 2> "$OUT/stderr" || status=$?
else
  # What heat-agents' hook-cfn-init.py does: the metadata in /var/cache/heat-cfntools/last_metadata, then cfn-init.
  mkdir -p -m 700 "$S/m/var/cache/heat-cfntools"
  cp "$SHARE/metadata.json" "$S/m/var/cache/heat-cfntools/last_metadata"
  run /usr/bin/cfn-init > "$OUT/stdout" 2> "$OUT/stderr" || status=$?
  cp "$S/m/var/log/cfn-init.log" "$OUT/cfn-init.log" 2>/dev/null || true
fi
echo "$status" > "$OUT/status"
cp "$S/m/etc/passwd" "$S/m/etc/group" "$OUT/"
cp "$S/m/root/cfn-order.log" "$OUT/order.log" 2>/dev/null || true
run dpkg-query -W -f '\${Status}' ${PACKAGE} > "$OUT/package" 2>/dev/null || true
cd "$S/u"
find . -path ./tmp -prune -o -printf '%p\\t%y\\t%m\\t%U\\t%G\\t%l\\n' > "$OUT/listing"
find . -path ./tmp -prune -o -type f -exec sha256sum {} + > "$OUT/sums"
`;

/** Paths whose presence or content differs between any two runs of the same tool (logs, caches, timestamps). */
const VOLATILE =
  /^\.\/(var\/log|var\/cache\/(apt|debconf|ldconfig|man)|var\/lib\/(apt|dpkg)|etc\/ld\.so\.cache)(\/|$)|__pycache__|^\.\/var\/cache\/heat-cfntools\/\.|^\.\/(etc\/(g?shadow-?))$/;
/** Listed, but their content differs by design: the metadata (JSON spacing), shadow files (change dates). */
const CONTENT_DIFFERS = /^\.\/(var\/cache\/heat-cfntools\/last_metadata|etc\/g?shadow-?)$/;

function readSide(out: string) {
  const listing = readFileSync(path.join(out, 'listing'), 'utf8')
    .split('\n')
    .filter((l) => l && !VOLATILE.test(l.split('\t')[0] ?? ''));
  const sums = readFileSync(path.join(out, 'sums'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const [sum, file] = l.split(/ {2}/) as [string, string];
      return `${file} ${sum}`;
    })
    .filter((l) => {
      const file = l.slice(0, l.lastIndexOf(' '));
      return !VOLATILE.test(file) && !CONTENT_DIFFERS.test(file);
    });
  const read = (f: string) => (existsSync(path.join(out, f)) ? readFileSync(path.join(out, f), 'utf8') : '');
  return {
    status: read('status').trim(),
    listing: listing.sort(),
    sums: sums.sort(),
    order: read('order.log'),
    package: read('package'),
    passwd: read('passwd'),
    group: read('group'),
  };
}

/** Runs a command without blocking this process (its HTTP server must answer meanwhile); killed after timeoutMs. */
function run(file: string, args: string[], timeoutMs: number): Promise<{ status: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(file, args, {
      env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stderr });
    });
  });
}

const skip = whyNot();
t.test(
  "the same metadata through heat-cfntools' cfn-init and through ours, in scratch roots: same result",
  { skip: skip ?? false, timeout: 240_000 },
  async (t) => {
    const dir = t.testdir();
    const share = path.join(dir, 'share');
    mkdirSync(share);
    writeFileSync(path.join(share, 'cfn-init'), readFileSync(HOOK), { mode: 0o755 });

    // The package comes from Debian's archive once, then from apt's cache in each root; no archive, no package part.
    const download = spawnSync('apt-get', ['download', PACKAGE], {
      cwd: share,
      timeout: 60_000,
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
    const havePackage = download.status === 0 && readdirSync(share).some((f) => f.endsWith('.deb'));
    if (!havePackage)
      t.comment(
        `the package part is skipped: "apt-get download ${PACKAGE}" failed (archive unreachable?): ${download.stderr?.toString().trim()}`,
      );

    const tarball = path.join(dir, 'src.tar.gz');
    const tree = path.join(dir, 'tree');
    mkdirSync(path.join(tree, 'bin'), { recursive: true });
    writeFileSync(path.join(tree, 'app.txt'), 'from a source\n');
    writeFileSync(path.join(tree, 'bin/run.sh'), '#!/bin/sh\n', { mode: 0o755 });
    spawnSync('tar', ['-czf', tarball, '--owner=0', '--group=0', '-C', tree, '.']);
    const served: Record<string, Buffer> = { '/src.tar.gz': readFileSync(tarball), '/motd': Buffer.from('fetched\n') };
    const server = await startTestServer((req, res) => {
      const body = served[req.url ?? ''];
      if (!body) res.writeHead(404).end();
      else res.writeHead(200, { 'content-length': body.length }).end(body);
    });
    t.teardown(() => server.close());

    const log = '/root/cfn-order.log';
    const init = {
      configSets: { default: ['base', 'app'] },
      base: {
        ...(havePackage ? { packages: { apt: { [PACKAGE]: [] } } } : {}),
        groups: { cfngrp: { gid: '4242' }, cfnother: {} },
        users: { cfnuser: { uid: '4243', groups: ['cfngrp'], homeDir: '/srv/cfnuser' } },
      },
      app: {
        sources: { '/opt/cfn-src': `${server.url}/src.tar.gz` },
        files: {
          '/etc/cfn-cmp/plain.conf': { content: 'a = 1\n', mode: '000640', owner: 'cfnuser', group: 'cfngrp' },
          '/etc/cfn-cmp/default-mode': { content: 'no mode given' },
          '/etc/cfn-cmp/deep/er/run.sh': { content: '#!/bin/sh\necho hi\n', mode: '000755' },
          '/etc/cfn-cmp/owner-only': { content: 'y', owner: 'cfnuser' },
          '/etc/cfn-cmp/from-url': { source: `${server.url}/motd`, mode: '000600' },
          '/srv/cfn-setuid': { content: 'z', mode: '004750', group: 'cfnother' },
        },
        commands: {
          '10-b': { command: `echo 10-b >> ${log}` },
          '02-a': { command: `echo "02-a $PWD" >> ${log}`, cwd: '/opt/cfn-src' },
          'B-upper': { command: ['/bin/sh', '-c', `echo B-upper >> ${log}`] },
          'a-lower': { command: `echo "a-lower $GREETING \${PATH:-nopath}" >> ${log}`, env: { GREETING: 'hi' } },
          'c-skip': { command: `echo c-skip >> ${log}`, test: 'false' },
          'd-fails': { command: `echo d-fails >> ${log}; exit 2`, ignoreErrors: true },
          'e-test-true': { command: `echo e >> ${log}`, test: 'test -e /etc/cfn-cmp/plain.conf' },
        },
      },
    };
    writeFileSync(
      path.join(share, 'deployment.json'),
      JSON.stringify({
        id: 'cmp-1',
        name: 'cmp',
        group: 'cfn-init',
        inputs: [],
        outputs: [],
        options: {},
        config: init,
      }),
    );
    writeFileSync(path.join(share, 'metadata.json'), JSON.stringify({ 'AWS::CloudFormation::Init': init }));

    const sides: Record<string, ReturnType<typeof readSide>> = {};
    for (const side of ['theirs', 'ours']) {
      const scratch = path.join(dir, `scratch-${side}`);
      const out = path.join(dir, `out-${side}`);
      mkdirSync(scratch);
      mkdirSync(out);
      const started = Date.now();
      const res = await run(
        'unshare',
        ['--mount', '--fork', 'bash', '-c', SCRATCH, 'scratch', scratch, side, share, out, process.execPath],
        120_000,
      );
      t.equal(res.status, 0, `${side}: the scratch root was made and listed`, { stderr: res.stderr });
      t.comment(`${side}: ${Date.now() - started} ms`);
      sides[side] = readSide(out);
      const shown = {
        stderr: existsSync(path.join(out, 'stderr')) ? readFileSync(path.join(out, 'stderr'), 'utf8').slice(-3000) : '',
      };
      t.equal(sides[side].status, '0', `${side}: exit status 0`, shown);
    }
    const theirs = sides.theirs!;
    const ours = sides.ours!;
    t.equal(
      theirs.order,
      '02-a /opt/cfn-src\n10-b\nB-upper\na-lower hi /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\nd-fails\ne\n',
      'heat-cfntools ran the commands in this order (the fixture is what we think it is; with "env" the shell has only its own default PATH)',
    );
    t.equal(ours.order, theirs.order, 'the same commands ran in the same order, with the same cwd and environment');
    t.same(ours.listing, theirs.listing, 'the same files, types, modes, owners, groups and link targets');
    t.same(ours.sums, theirs.sums, 'the same file contents');
    t.equal(ours.passwd, theirs.passwd, 'the same /etc/passwd');
    t.equal(ours.group, theirs.group, 'the same /etc/group');
    t.match(
      theirs.passwd,
      /^cfnuser:x:4243:\d+::\/srv\/cfnuser:\/sbin\/nologin$/m,
      'the user is there (the fixture worked)',
    );
    t.match(theirs.group, /^cfngrp:x:4242:cfnuser$/m);
    t.ok(
      theirs.listing.some((l) => l.startsWith('./etc/cfn-cmp/plain.conf\tf\t640\t4243\t4242')),
      'the owned file is there',
    );
    if (havePackage) {
      t.equal(theirs.package, 'install ok installed', `heat-cfntools installed ${PACKAGE}`);
      t.equal(ours.package, 'install ok installed', `we installed ${PACKAGE}`);
    }
  },
);
