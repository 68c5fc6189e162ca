import {
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { REPO, requireBundle, runBundle, runProcess } from '../helpers/bundle.js';
import { startCfnServer, type CfnServer } from '../helpers/cfn-server.js';
import { refusedUrl, type TapTest } from '../helpers/http-test-server.js';

// heat-cfntools' commands as templates run them: the real bundle under their names (links to it, as the image element
// makes them), every path under --root, against a loopback heat-api-cfn that checks each signature. Exit statuses are
// heat-cfntools' (test/conformance/cfntools.test.ts compares them with Debian's on the same steps).

const NAMES = ['cfn-init', 'cfn-get-metadata', 'cfn-hup', 'cfn-push-stats', 'cfn-create-aws-symlinks'] as const;
const BIN = path.join(t.testdirName, '..', 'cfn-commands-bin');
rmSync(BIN, { recursive: true, force: true });
mkdirSync(BIN, { recursive: true });
for (const name of NAMES) symlinkSync(requireBundle(), path.join(BIN, name));
const cmd = (name: (typeof NAMES)[number], args: string[], env: NodeJS.ProcessEnv = {}) =>
  runBundle(args, { entry: path.join(BIN, name), env: { ...process.env, ...env }, timeoutMs: 60_000 });

let server: CfnServer;
t.before(async () => {
  server = await startCfnServer();
});
t.teardown(() => server.close());

const INIT = {
  configSets: { default: ['base'], extra: ['more'] },
  base: {
    files: { '/etc/app/app.conf': { content: 'port=80\n', mode: '000600' } },
    commands: { '10-hello': { command: 'echo hello; echo warn >&2' } },
  },
  more: { files: { '/etc/app/more.conf': { content: 'more\n' } } },
  broken: { files: { '/etc/app/x': { content: 'x', colour: 'blue' } } },
};

/** An instance root whose boot data names the test's heat-api-cfn, and an agent configuration without sources. */
function instance(t: TapTest): { root: string; at: (p: string) => string; keys: string[] } {
  const root = t.testdir();
  const at = (p: string) => path.join(root, p);
  mkdirSync(at('var/lib/heat-cfntools'), { recursive: true });
  writeFileSync(at('var/lib/heat-cfntools/cfn-metadata-server'), `${server.url}/v1/\n`);
  mkdirSync(at('etc'), { recursive: true });
  writeFileSync(at('etc/os-collect-config.conf'), '[cfn]\ntimeout = 2\n', { mode: 0o600 });
  server.resources.set('web', JSON.stringify({ 'AWS::CloudFormation::Init': INIT, other: 'x' }));
  return { root, at, keys: ['--access-key', server.accessKey, '--secret-key', server.secret] };
}

t.test('cfn-init -s -r --access-key --secret-key: fetched, saved for cfn-hup, applied, logged', async (t) => {
  const { root, at, keys } = instance(t);
  const run = await cmd('cfn-init', ['--root', root, '-s', server.stackName, '-r', 'web', ...keys]);
  t.equal(run.code, 0, run.stderr);
  t.equal(run.stdout, '', 'nothing on stdout, as heat-cfntools');
  t.equal(readFileSync(at('etc/app/app.conf'), 'utf8'), 'port=80\n');
  t.equal(statSync(at('etc/app/app.conf')).mode & 0o777, 0o600);
  t.notOk(existsSync(at('etc/app/more.conf')), 'only the default configSet');
  for (const copy of ['last_metadata', 'last_metadata_web']) {
    const file = at(`var/cache/heat-cfntools/${copy}`);
    t.same(JSON.parse(readFileSync(file, 'utf8')), { 'AWS::CloudFormation::Init': INIT, other: 'x' }, copy);
    t.equal(statSync(file).mode & 0o777, 0o600, `${copy} is 0600`);
  }
  const log = readFileSync(at('var/log/cfn-init.log'), 'utf8');
  t.equal(statSync(at('var/log/cfn-init.log')).mode & 0o777, 0o600, 'the log is 0600');
  t.match(
    log,
    /^INFO \[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] fetching metadata stack=demo-stack resource=web endpoint=http/m,
  );
  t.match(log, /commands printed stdout=hello\n stderr=warn\n/);
  t.notMatch(`${log}${run.stdout}${run.stderr}`, server.secret, 'the secret key is in no output');

  const more = await cmd('cfn-init', ['--root', root, '-s', server.stackName, '-r', 'web', ...keys, '-c', 'extra']);
  t.equal(more.code, 0, more.stderr);
  t.equal(readFileSync(at('etc/app/more.conf'), 'utf8'), 'more\n', '-c chooses the configSets');
});

t.test(
  'cfn-init without keys reads the local copy (the heat-config hook calls it so); each failure exits 1',
  async (t) => {
    const { root, at, keys } = instance(t);
    const base = ['--root', root];
    const none = await cmd('cfn-init', base);
    t.equal(none.code, 1, 'nothing anywhere');
    t.match(none.stderr, /cfn-init: ERROR .*no credentials were given and there is no local copy of the metadata/);
    writeFileSync(at('var/lib/heat-cfntools/cfn-init-data'), JSON.stringify({ 'AWS::CloudFormation::Init': INIT }));
    const local = await cmd('cfn-init', base);
    t.equal(local.code, 0, local.stderr);
    t.equal(local.stderr, '', 'no warning for the usual case');
    t.ok(existsSync(at('etc/app/app.conf')), "Heat's boot data applied");

    const failures: Array<[string, string[], RegExp]> = [
      [
        'wrong secret',
        ['-s', server.stackName, '-r', 'web', '--access-key', server.accessKey, '--secret-key', 'nope'],
        /refused the keys for resource web of stack demo-stack \(403/,
      ],
      [
        'half the keys',
        ['-s', server.stackName, '-r', 'web', '--access-key', server.accessKey],
        /--secret-key is missing/,
      ],
      ['keys, no resource', ['-s', server.stackName, ...keys], /give -s STACK and -r RESOURCE/],
      [
        'no such resource',
        ['-s', server.stackName, '-r', 'nosuch', ...keys],
        /answered 404: ResourceNotFound for resource nosuch/,
      ],
      [
        'unknown configSet',
        ['-s', server.stackName, '-r', 'web', ...keys, '-c', 'nope'],
        /requested configSet "nope" is not in the configSets section/,
      ],
      ['bad config', ['-s', server.stackName, '-r', 'web', ...keys, '-c', 'bad'], /unknown key "colour"/],
      ['no Init', ['-s', server.stackName, '-r', 'plain', ...keys], /has no AWS::CloudFormation::Init section/],
      [
        'unreachable',
        ['-s', server.stackName, '-r', 'web', ...keys, '--url', await refusedUrl()],
        /cannot reach heat-api-cfn/,
      ],
    ];
    server.resources.set('plain', JSON.stringify({ just: 'data' }));
    server.resources.set(
      'web',
      JSON.stringify({ 'AWS::CloudFormation::Init': { ...INIT, configSets: { ...INIT.configSets, bad: ['broken'] } } }),
    );
    for (const [what, args, expected] of failures) {
      const run = await cmd('cfn-init', [...base, ...args]);
      t.equal(run.code, 1, `${what}: exit 1`);
      t.match(run.stderr, expected, `${what}: stderr says why`);
      t.equal(run.stderr.split('\n').filter((l) => l.includes('ERROR')).length, 1, `${what}: one error line`);
    }
    const usage = await cmd('cfn-init', [...base, '--no-such-flag']);
    t.equal(usage.code, 2, 'a usage error exits 2');
  },
);

t.test('cfn-get-metadata prints json.dumps of the metadata or of a key; its checks as heat-cfntools', async (t) => {
  const { root, keys } = instance(t);
  server.resources.set('web', JSON.stringify({ a: { 'b.c': [1, 'é'] }, n: null }));
  const base = ['--root', root, '-s', server.stackName, '-r', 'web', ...keys];
  const all = await cmd('cfn-get-metadata', base);
  t.equal(all.code, 0, all.stderr);
  t.equal(all.stdout, '{"a": {"b.c": [1, "\\u00e9"]}, "n": null}\n');
  t.equal((await cmd('cfn-get-metadata', [...base, '-k', "a.'b.c'"])).stdout, '[1, "\\u00e9"]\n');
  const missing = await cmd('cfn-get-metadata', [...base, '-k', 'n']);
  t.same([missing.code, missing.stdout], [0, ''], 'null or missing: nothing printed');
  const empty = await cmd('cfn-get-metadata', ['--root', root, '-s', '', '-r', 'web']);
  t.same([empty.code, empty.stdout], [1, 'The Stack name must not be empty.\n']);
  const noResource = await cmd('cfn-get-metadata', ['--root', root, '-s', 'x', '-r', '']);
  t.same([noResource.code, noResource.stdout], [1, 'The Resource ID must not be empty\n']);
  t.equal((await cmd('cfn-get-metadata', ['--root', root, '-s', 'x'])).code, 2, '-r is required');
  const nothing = await cmd('cfn-get-metadata', ['--root', root, '-s', 'x', '-r', 'y']);
  t.same([nothing.code, nothing.stdout], [0, ''], 'no keys and no local copy: nothing, exit 0, as heat-cfntools');
  t.match(nothing.stderr, /no local copy/, 'the reason on stderr');
  const refused = await cmd('cfn-get-metadata', [...base.slice(0, 6), '--access-key', 'x', '--secret-key', 'y']);
  t.same([refused.code, refused.stdout], [1, '']);
  t.notOk(existsSync(path.join(root, 'var/cache/heat-cfntools/last_metadata')), 'reading leaves the copies alone');
});

t.test('cfn-hup -f fires on a change and exits 0; once without -f too; a broken configuration exits 1', async (t) => {
  const { root, at } = instance(t);
  const fired = path.join(root, 'fired');
  mkdirSync(at('etc/cfn'), { recursive: true });
  writeFileSync(
    at('etc/cfn/cfn-hup.conf'),
    `[main]\nstack=${server.stackName}\ncredential-file=/etc/cfn/cfn-credentials\n`,
  );
  writeFileSync(at('etc/cfn/cfn-credentials'), `AWSAccessKeyId=${server.accessKey}\nAWSSecretKey=${server.secret}\n`, {
    mode: 0o600,
  });
  writeFileSync(
    at('etc/cfn/hooks.conf'),
    `[h]\ntriggers=post.add,post.update\npath=Resources.web.Metadata\naction=echo fired >> ${fired}\nrunas=root\n`,
  );
  const first = await cmd('cfn-hup', ['--root', root, '-f']);
  t.equal(first.code, 0, first.stderr);
  t.equal(readFileSync(fired, 'utf8'), 'fired\n');
  t.equal((await cmd('cfn-hup', ['--root', root])).code, 0, 'without -f: one check as well');
  t.equal(readFileSync(fired, 'utf8'), 'fired\n', 'no change, no action');
  t.match(readFileSync(at('var/log/cfn-hup.log'), 'utf8'), /hook action succeeded hook=h/);
  mkdirSync(at('etc/cfn/hooks.d'));
  writeFileSync(at('etc/cfn/hooks.d/bad.conf'), '[x]\nthis line\n');
  const broken = await cmd('cfn-hup', ['--root', root, '-f']);
  t.equal(broken.code, 1);
  t.match(broken.stderr, /cannot parse \/etc\/cfn\/hooks\.d\/bad\.conf line 2/);
  rmSync(at('etc/cfn/hooks.d/bad.conf'));
  writeFileSync(at('etc/cfn/hooks.d/gone.conf'), '[g]\ntriggers=post.add\npath=Resources.gone.Metadata\naction=true\n');
  const gone = await cmd('cfn-hup', ['--root', root, '-f']);
  t.equal(gone.code, 1, "a resource heat-api-cfn does not know: exit 1, as heat-cfntools' crash");
  t.match(gone.stderr, /metadata not checked resource=gone/);
});

t.test('cfn-push-stats: one line saying why, exit 1; heat-cfntools flags accepted, others a usage error', async (t) => {
  for (const args of [[], ['--mem-util', '--watch', 'alarm', '--credential-file', '/etc/cfn/cfn-credentials']]) {
    const run = await cmd('cfn-push-stats', args);
    t.equal(run.code, 1);
    t.equal(run.stdout, '');
    t.match(
      run.stderr,
      /^cfn-push-stats: Heat removed the CloudWatch API \(heat-api-cloudwatch, in its Queens release\)[^\n]*\n$/,
    );
  }
  t.equal((await cmd('cfn-push-stats', ['--bogus'])).code, 2);
});

t.test(
  "cfn-create-aws-symlinks: ours into /opt/aws/bin, or a real heat-cfntools' when installed; existing files kept",
  async (t) => {
    const root = t.testdir();
    const at = (p: string) => path.join(root, p);
    const run = (...args: string[]) => cmd('cfn-create-aws-symlinks', ['--root', root, ...args]);
    const first = await run();
    t.equal(first.code, 0, first.stderr);
    t.match(first.stdout, new RegExp(`^${BIN} -> /opt/aws/bin\n`), 'ours, when no heat-cfntools is installed');
    for (const name of NAMES) t.equal(readlinkSync(at(`opt/aws/bin/${name}`)), path.join(BIN, name), `${name} linked`);
    const again = await run();
    t.match(again.stdout, /\/opt\/aws\/bin\/cfn-init already exists, will not replace with symlink/);

    // A real heat-cfntools: its /usr/bin/cfn-* are linked instead, and our links pointed at them.
    mkdirSync(at('usr/bin'), { recursive: true });
    for (const name of ['cfn-init', 'cfn-hup', 'cfn-signal'])
      writeFileSync(at(`usr/bin/${name}`), '#! /usr/bin/python3\nfrom heat_cfntools.cfntools import cfn_helper\n', {
        mode: 0o755,
      });
    writeFileSync(at('opt/aws/bin/cfn-signal'), 'a file of someone else');
    const theirs = await run();
    t.equal(theirs.code, 0, theirs.stderr);
    t.match(theirs.stdout, /^\/usr\/bin -> \/opt\/aws\/bin\n/);
    t.equal(readlinkSync(at('opt/aws/bin/cfn-init')), '/usr/bin/cfn-init', 'our link now points at heat-cfntools');
    t.equal(readlinkSync(at('opt/aws/bin/cfn-hup')), '/usr/bin/cfn-hup');
    t.ok(lstatSync(at('opt/aws/bin/cfn-signal')).isFile(), 'a file that is not ours is kept');
    t.equal(
      readlinkSync(at('opt/aws/bin/cfn-get-metadata')),
      path.join(BIN, 'cfn-get-metadata'),
      'not in /usr/bin: left as it is',
    );
    const forced = await run('-f', '-s', '/usr/bin');
    t.equal(forced.code, 0);
    t.equal(readlinkSync(at('opt/aws/bin/cfn-signal')), '/usr/bin/cfn-signal', '-f replaces it');
    t.equal((await run('-s', '/opt/aws/bin')).code, 1, 'source and target the same: exit 1, as heat-cfntools');
    // heat-cfntools removed: its links point at nothing and are made again, to ours.
    rmSync(at('usr/bin'), { recursive: true });
    const after = await run();
    t.equal(after.code, 0, after.stderr);
    t.equal(readlinkSync(at('opt/aws/bin/cfn-init')), path.join(BIN, 'cfn-init'), 'a dangling link is replaced');
  },
);

t.test('the os-config-agent subcommands are the same commands', async (t) => {
  for (const name of ['cfn-init', 'cfn-get-metadata', 'cfn-hup']) {
    const help = await runBundle([name, '--help']);
    t.equal(help.code, 0, name);
    t.match(help.stdout, new RegExp(`^Usage: os-config-agent ${name} `));
  }
});

// The logger (pino) is the agent's, not these commands' (they write heat-cfntools' log files): loading it cost every
// run ~10 ms of CPU (docs/performance.md). Its worker thread transport is what brings node:worker_threads. Started
// through env(1) without NODE_OPTIONS: tap puts its loader hooks, which load worker_threads, into every child's.
t.test('cfn-get-metadata starts without the logger: no node:worker_threads', async (t) => {
  const { root, keys } = instance(t);
  const report = path.join(root, 'builtins.json');
  const preload = path.join(REPO, 'test/helpers/builtins-report-preload.mjs');
  const args = ['--root', root, '-s', server.stackName, '-r', 'web', ...keys];
  const run = await runProcess(
    '/usr/bin/env',
    ['-u', 'NODE_OPTIONS', process.execPath, `--import=${preload}`, path.join(BIN, 'cfn-get-metadata'), ...args],
    { env: { ...process.env, OCA_BUILTINS_REPORT: report }, timeoutMs: 60_000 },
  );
  t.equal(run.code, 0, run.stderr);
  const loaded = JSON.parse(readFileSync(report, 'utf8')) as string[];
  t.ok(loaded.includes('NativeModule http'), 'the report lists what the command did load (its request)');
  t.notOk(loaded.includes('NativeModule worker_threads'), 'not the logger');
});

// The first Intl.ListFormat loads ICU's locale data: ~15 ms of CPU. The HTTP library the client was once built on made
// two as it loaded, in every process that made a request; none may come back with another dependency.
t.test('cfn-get-metadata makes its request without making an Intl.ListFormat', async (t) => {
  const { root, keys } = instance(t);
  const report = path.join(root, 'list-formats');
  const preload = path.join(REPO, 'test/helpers/list-format-report-preload.mjs');
  const counted = async (args: string[]) => {
    const run = await runProcess(
      '/usr/bin/env',
      ['-u', 'NODE_OPTIONS', process.execPath, `--import=${preload}`, ...args],
      {
        env: { ...process.env, OCA_LIST_FORMAT_REPORT: report },
        timeoutMs: 60_000,
      },
    );
    t.equal(run.code, 0, run.stderr);
    return readFileSync(report, 'utf8');
  };
  t.equal(await counted(['-e', "new Intl.ListFormat('en')"]), '1', 'the report counts what is made');
  const args = ['--root', root, '-s', server.stackName, '-r', 'web', ...keys];
  t.equal(await counted([path.join(BIN, 'cfn-get-metadata'), ...args]), '0', 'none made by the command');
});

t.test('cfn-init and cfn-get-metadata document their credential flags alike (defined once)', async (t) => {
  const flags = /^ *(--access-key|--secret-key|--region|--credential-file|-u, --url)\b.*$/gm;
  const init = (await cmd('cfn-init', ['--help'])).stdout.match(flags);
  const getMetadata = (await cmd('cfn-get-metadata', ['--help'])).stdout.match(flags);
  t.equal(init?.length, 5, 'all five in cfn-init --help');
  t.same(getMetadata, init);
});
