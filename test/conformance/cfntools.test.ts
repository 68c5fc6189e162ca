import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { installBundle, REPO } from '../helpers/bundle.js';
import { startCfnServer } from '../helpers/cfn-server.js';
import { startTestServer } from '../helpers/http-test-server.js';
import { SCRATCH_ROOT_MOUNTS, SCRATCH_ROOT_RUN } from '../helpers/scratch-root.js';

// Debian's heat-cfntools and ours, each in a scratch root (a private mount namespace with an overlay over this
// machine's /, as test/hooks/cfn-init-reference.test.ts makes them), run the same steps against the same heat-api-cfn
// on loopback (test/helpers/cfn-server.ts: boto's v4-signed JSON requests and our v2-signed XML ones alike):
// cfn-get-metadata's output, cfn-init from the remote metadata (keys, configSets, and the bad inputs: wrong key, no
// such resource, metadata that is not JSON or has no AWS::CloudFormation::Init), then cfn-hup -f before and after a
// change of the metadata, with a runas user, a broken hooks.d file and a runas user that does not exist. Every step's
// exit status, what cfn-get-metadata printed, the order and effects of the commands and of the hook actions must be
// the same.

const STACK = 'demo-stack';
const AK = 'AKCONFORM0001';
const SK = 'conform-secret-0123456789';

function whyNot(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root (mount namespaces, overlayfs, chroot)';
  for (const tool of ['cfn-init', 'cfn-get-metadata', 'cfn-hup'])
    if (!existsSync(`/usr/bin/${tool}`)) return `/usr/bin/${tool} is missing: apt-get install heat-cfntools`;
  if (!existsSync(path.join(REPO, 'dist/os-config-agent.mjs'))) return 'dist/ is not built: npm run build';
  const probe = spawnSync('unshare', ['--mount', '--fork', 'true'], { timeout: 20_000 });
  if (probe.status !== 0) return `no mount namespaces here: ${probe.stderr?.toString().trim()}`;
  return undefined;
}

const init = (marker: string) => ({
  configSets: { default: ['base'], other: ['extra'] },
  base: {
    groups: { cfnhupgrp: {} },
    users: { cfnhupusr: { groups: ['cfnhupgrp'], homeDir: '/srv/cfnhupusr' } },
    files: {
      '/etc/cfnconf/app.conf': { content: `marker=${marker}\n`, mode: '000640', owner: 'cfnhupusr' },
      // JSON (non-text) content crashes heat-cfntools 1.4.2 under Python 3; the hook's tests cover ours.
      '/etc/cfnconf/data.txt': { content: 'é ü\n', encoding: 'plain' },
    },
    commands: {
      '20-second': { command: `echo "second ${marker}" >> /root/order.log` },
      '10-first': { command: ['/bin/sh', '-c', 'echo first >> /root/order.log'] },
      '30-skipped': { command: 'echo never >> /root/order.log', test: 'false' },
    },
  },
  extra: { files: { '/etc/cfnconf/extra.conf': { content: 'extra\n' } } },
});

const metadata = (marker: string) =>
  JSON.stringify({ 'AWS::CloudFormation::Init': init(marker), 'a.b': { c: 'dotted' }, text: 'ñ', nothing: null });

const HUP_CONF = `[main]\nstack=${STACK}\ncredential-file=/etc/cfn/cfn-credentials\nregion=nova\ninterval=1\n`;
const HOOKS_CONF =
  '[update]\ntriggers=post.update\npath=Resources.web.Metadata.AWS::CloudFormation::Init\naction=echo "update $(cat /etc/cfnconf/app.conf)" >> /root/hup.log\nrunas=root\n\n' +
  '[as-nobody]\ntriggers=post.add,post.update\npath=Resources.web.Metadata.AWS::CloudFormation::Init.base\naction=id -un >> /tmp/hup-nobody\nrunas=nobody\n';

// The steps, in the scratch root; `tool NAME ARGS` runs heat-cfntools' or our command of that name.
const STEPS = `
set -u
SIDE=$1
tool() { n=$1; shift; if [ "$SIDE" = ours ]; then "$NODE" /tmp/share/oca/"$n" "$@"; else /usr/bin/"$n" "$@"; fi; }
step() { name=$1; shift; "$@" > "/tmp/out/$name.stdout" 2> "/tmp/out/$name.stderr"; echo "$name $?" >> /tmp/out/status; }
keys="--access-key ${AK} --secret-key"
serve() { cp "/tmp/share/$1.json" /tmp/share/served/web.json; }
step get-nokeys tool cfn-get-metadata -s ${STACK} -r web
step get-all tool cfn-get-metadata -s ${STACK} -r web $keys ${SK}
step get-key tool cfn-get-metadata -s ${STACK} -r web $keys ${SK} -k AWS::CloudFormation::Init.base.files
step get-quoted tool cfn-get-metadata -s ${STACK} -r web $keys ${SK} -k "'a.b'.c"
step get-text tool cfn-get-metadata -s ${STACK} -r web $keys ${SK} -k text
step get-null tool cfn-get-metadata -s ${STACK} -r web $keys ${SK} -k nothing
step get-missing tool cfn-get-metadata -s ${STACK} -r web $keys ${SK} -k AWS::CloudFormation::Init.none
step get-empty-stack tool cfn-get-metadata -s '' -r web $keys ${SK}
step init-remote tool cfn-init -s ${STACK} -r web $keys ${SK}
step init-configset tool cfn-init -s ${STACK} -r web $keys ${SK} -c other
step init-badkey tool cfn-init -s ${STACK} -r web $keys wrong-secret
step init-noresource tool cfn-init -s ${STACK} -r nosuch $keys ${SK}
step init-notjson tool cfn-init -s ${STACK} -r broken $keys ${SK}
step init-noinit tool cfn-init -s ${STACK} -r plain $keys ${SK}
step init-local tool cfn-init
cp /var/lib/heat-cfntools/cfn-metadata-server /tmp/server
echo "http://127.0.0.1:$CLOSED_PORT" > /var/lib/heat-cfntools/cfn-metadata-server
step init-unreachable tool cfn-init -s ${STACK} -r web $keys ${SK}
cp /tmp/server /var/lib/heat-cfntools/cfn-metadata-server
mkdir -p /etc/cfn/hooks.d
cp /tmp/share/cfn-hup.conf /etc/cfn/cfn-hup.conf
cp /tmp/share/hooks.conf /etc/cfn/hooks.conf
printf 'AWSAccessKeyId=${AK}\\nAWSSecretKey=${SK}\\n' > /etc/cfn/cfn-credentials
chmod 600 /etc/cfn/cfn-credentials
step init-baseline tool cfn-init -s ${STACK} -r web $keys ${SK}
step hup-nochange tool cfn-hup -f
serve web-v2
step hup-change tool cfn-hup -f
step hup-again tool cfn-hup -f
echo 'this is not an ini line' > /etc/cfn/hooks.d/broken.conf
step hup-broken tool cfn-hup -f
rm /etc/cfn/hooks.d/broken.conf
printf '[nouser]\\ntriggers=post.update\\npath=Resources.web.Metadata.AWS::CloudFormation::Init\\naction=echo nouser >> /root/hup.log\\nrunas=nosuchuser\\n' > /etc/cfn/hooks.d/nouser.conf
serve web-v3
step hup-nouser tool cfn-hup -f
cp /root/order.log /root/hup.log /tmp/hup-nobody /etc/passwd /etc/group /var/log/cfn-init.log /var/log/cfn-hup.log /tmp/out/ 2>/dev/null
cd / && find etc/cfnconf srv -printf '%p\\t%y\\t%m\\t%u\\t%g\\n' 2>/dev/null | sort > /tmp/out/listing
cat etc/cfnconf/* > /tmp/out/contents
for f in /var/cache/heat-cfntools/last_metadata*; do echo "$(basename "$f")"; done > /tmp/out/copies
cp /var/cache/heat-cfntools/last_metadata_web /tmp/out/last_metadata_web
exit 0
`;

const SCRATCH = `
set -eu
S=$1; SHARE=$2; OUT=$3; SIDE=$4; NODE=$5; CLOSED_PORT=$6
${SCRATCH_ROOT_MOUNTS}
mkdir "$S/m/tmp/share" "$S/m/tmp/out"
mount --bind "$SHARE" "$S/m/tmp/share"
mount --bind "$OUT" "$S/m/tmp/out"
mkdir -p "$S/m/var/lib/heat-cfntools"
cp "$SHARE/cfn-metadata-server" "$SHARE/cfn-boto-cfg" "$S/m/var/lib/heat-cfntools/"
${SCRATCH_ROOT_RUN}
run /usr/bin/env NODE="$NODE" CLOSED_PORT="$CLOSED_PORT" bash /tmp/share/steps.sh "$SIDE"
`;

function runScratch(args: string[], timeoutMs: number): Promise<{ status: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn('unshare', ['--mount', '--fork', 'bash', '-c', SCRATCH, 'scratch', ...args], {
      env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stderr });
    });
  });
}

const skip = whyNot();
t.test(
  "heat-cfntools' cfn-get-metadata, cfn-init and cfn-hup and ours, step by step in scratch roots: same results",
  { skip: skip ?? false, timeout: 420_000 },
  async (t) => {
    const dir = t.testdir();
    const share = path.join(dir, 'share');
    const served = path.join(share, 'served');
    mkdirSync(served, { recursive: true });
    // Our bundle, with one link per command name as the image element lays it out.
    installBundle(path.join(share, 'oca'), ['cfn-init', 'cfn-get-metadata', 'cfn-hup']);
    writeFileSync(path.join(share, 'steps.sh'), STEPS);
    writeFileSync(path.join(share, 'cfn-hup.conf'), HUP_CONF);
    writeFileSync(path.join(share, 'hooks.conf'), HOOKS_CONF);
    for (const [name, text] of Object.entries({
      web: metadata('v1'),
      'web-v2': metadata('v2'),
      'web-v3': metadata('v3'),
    }))
      writeFileSync(path.join(share, `${name}.json`), text);
    const fixed: Record<string, string> = { broken: 'this is { not json', plain: JSON.stringify({ just: 'data' }) };
    const server = await startCfnServer({
      accessKey: AK,
      secret: SK,
      stackName: STACK,
      resourceText: (resource) => {
        if (resource in fixed) return fixed[resource];
        const file = path.join(served, `${resource}.json`);
        return existsSync(file) ? readFileSync(file, 'utf8') : undefined;
      },
    });
    t.teardown(() => server.close());
    // Older Heat's form (no path): the only one heat-cfntools reads a port from.
    writeFileSync(path.join(share, 'cfn-metadata-server'), `http://127.0.0.1:${server.port}\n`);
    writeFileSync(
      path.join(share, 'cfn-boto-cfg'),
      // num_retries = 0: boto's six retries of a refused connection would take up to a minute.
      '[Boto]\ndebug = 0\nnum_retries = 0\nis_secure = 0\nhttps_validate_certificates = 1\ncfn_region_name = heat\ncfn_region_endpoint = 127.0.0.1\n',
    );

    // A port nothing listens on: a server started and closed again.
    const gone = await startTestServer((_req, res) => void res.end());
    const closed = gone.port;
    await gone.close();
    const sides: Record<string, Record<string, string>> = {};
    for (const side of ['theirs', 'ours']) {
      cpSync(path.join(share, 'web.json'), path.join(served, 'web.json'));
      const out = path.join(dir, `out-${side}`);
      const scratch = path.join(dir, `scratch-${side}`);
      mkdirSync(out);
      mkdirSync(scratch);
      const started = Date.now();
      const res = await runScratch([scratch, share, out, side, process.execPath, String(closed)], 200_000);
      t.equal(res.status, 0, `${side}: the scratch root ran the steps`, { stderr: res.stderr });
      t.comment(`${side}: ${Date.now() - started} ms`);
      const read = (f: string) => (existsSync(path.join(out, f)) ? readFileSync(path.join(out, f), 'utf8') : '');
      const files = [
        'status',
        'order.log',
        'hup.log',
        'cfn-init.log',
        'cfn-hup.log',
        'hup-nobody',
        'listing',
        'contents',
        'copies',
        'passwd',
        'group',
      ];
      sides[side] = Object.fromEntries(files.map((f) => [f, read(f)]));
      for (const step of sides[side].status!.split('\n').filter(Boolean)) {
        const name = step.split(' ')[0]!;
        sides[side][`${name}.stdout`] = read(`${name}.stdout`);
        sides[side][`${name}.stderr`] = read(`${name}.stderr`);
      }
      sides[side].last = read('last_metadata_web');
      rmSync(scratch, { recursive: true, force: true });
    }
    const theirs = sides.theirs!;
    const ours = sides.ours!;
    const statuses = (s: Record<string, string>) => s.status!.trim().split('\n');
    t.same(
      statuses(theirs),
      [
        'get-nokeys 0',
        'get-all 0',
        'get-key 0',
        'get-quoted 0',
        'get-text 0',
        'get-null 0',
        'get-missing 0',
        'get-empty-stack 1',
        'init-remote 0',
        'init-configset 0',
        'init-badkey 1',
        'init-noresource 1',
        'init-notjson 1',
        'init-noinit 1',
        'init-local 1',
        'init-unreachable 1',
        'init-baseline 0',
        'hup-nochange 0',
        'hup-change 0',
        'hup-again 0',
        'hup-broken 1',
        'hup-nouser 0',
      ],
      "heat-cfntools' exit statuses (the fixture does what we think)",
    );
    t.same(statuses(ours), statuses(theirs), 'the same exit status at every step');
    for (const step of [
      'get-nokeys',
      'get-all',
      'get-key',
      'get-quoted',
      'get-text',
      'get-null',
      'get-missing',
      'get-empty-stack',
    ])
      t.equal(ours[`${step}.stdout`], theirs[`${step}.stdout`], `${step}: cfn-get-metadata printed the same`, {
        theirs: theirs[`${step}.stderr`]?.slice(-2000),
        ours: ours[`${step}.stderr`]?.slice(-2000),
      });
    t.match(theirs['get-all.stdout'], /^\{"AWS::CloudFormation::Init": \{"configSets": /, 'json.dumps of the metadata');
    t.equal(theirs['get-text.stdout'], '"\\u00f1"\n', 'non-ASCII as json.dumps writes it');
    t.equal(ours['order.log'], theirs['order.log'], 'the commands ran in the same order, as often');
    t.equal(
      theirs['order.log'],
      'first\nsecond v1\nfirst\nsecond v1\n',
      'init-remote and init-baseline ran the commands',
    );
    t.equal(ours.listing, theirs.listing, 'the same files, modes and owners');
    t.equal(ours.contents, theirs.contents, 'the same file contents');
    t.match(theirs.contents, /extra\n/, '-c other applied the other configSet');
    t.equal(ours.passwd, theirs.passwd, 'the same users');
    t.equal(ours.group, theirs.group, 'the same groups');
    t.equal(ours.copies, theirs.copies, 'the same copies of the metadata kept for cfn-hup');
    t.same(JSON.parse(ours.last || 'null'), JSON.parse(theirs.last || 'null'), 'holding the same metadata');
    t.equal(
      theirs['hup.log'],
      'update marker=v1\nupdate marker=v1\n',
      "heat-cfntools' hook fired on each change (v2, v3)",
    );
    t.equal(ours['hup.log'], theirs['hup.log'], 'the same hook actions fired, in the same order');
    // A deliberate difference: heat-cfntools switched only the effective uid for the action, which /bin/sh (dash since
    // 0.5.11) resets to the real one, so its runas actions ran as root; ours run as the user.
    t.equal(theirs['hup-nobody'], 'root\nroot\n', "heat-cfntools' runas hook fired twice, and ran as root");
    t.equal(ours['hup-nobody'], 'nobody\nnobody\n', 'ours fired as often, as nobody');
    t.notMatch(ours['hup-nouser.stderr'] ?? '', /^$/, 'ours says why a hook did not run');
    t.match(ours['hup-nouser.stderr'], /runas user does not exist.*nosuchuser/, 'naming the user');
    t.match(
      ours['hup-broken.stderr'],
      /cannot parse \/etc\/cfn\/hooks\.d\/broken\.conf line 1/,
      'ours names the broken file',
    );
    t.match(ours['init-badkey.stderr'], /refused the keys/, 'ours says the keys were refused');
    t.match(ours['init-noresource.stderr'], /answered 404.*nosuch/, 'ours names the missing resource');
    t.match(ours['init-notjson.stderr'], /not JSON/);
    t.match(
      ours['init-unreachable.stderr'],
      /cannot reach heat-api-cfn at http:\/\/127\.0\.0\.1:\d+\/v1\/ for resource web/,
    );
    t.match(ours['init-noinit.stderr'], /has no AWS::CloudFormation::Init section/);
    t.notMatch(JSON.stringify(ours), new RegExp(SK), 'the secret key appears in none of our output');
  },
);
