import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { userInfo } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { startTestServer, type TapTest } from '../../helpers/http-test-server.js';
import { HOOK_MODES, SYSTEM_PATH, modeOf, runHook, runHookInProcess } from '../hook-process.js';

// The cfn-init hook's own interpreter of AWS::CloudFormation::Init, run both ways (executable and in-process), with
// every file path under OS_CONFIG_AGENT_ROOT. Accounts and packages are real system changes: they are compared with
// heat-cfntools' cfn-init in scratch roots by cfn-init-reference.test.ts. Services here go to a recording fake
// systemctl.

const deployment = (config: unknown) => ({
  id: 'dep-cfn-1',
  name: 'init',
  group: 'cfn-init',
  options: {},
  inputs: [],
  outputs: [],
  config,
});

function setup(t: TapTest) {
  const dir = t.testdir();
  const root = path.join(dir, 'root');
  mkdirSync(root);
  const env: Record<string, string> = { PATH: SYSTEM_PATH, HOME: dir, OS_CONFIG_AGENT_ROOT: root };
  return { dir, root, env, at: (p: string) => path.join(root, p) };
}

// One HTTP server for the file: archives, a file, a 404 and a server that never answers.
const tarDir = t.testdir({
  tree: { 'app.conf': 'from the tarball\n', sub: { 'data.txt': 'nested\n' } },
  zip: { 'z.txt': 'from the zip\n' },
});
execFileSync('tar', ['-czf', path.join(tarDir, 'app.tar.gz'), '-C', path.join(tarDir, 'tree'), '.']);
execFileSync('bsdtar', ['-a', '-cf', path.join(tarDir, 'app.zip'), '-C', path.join(tarDir, 'zip'), 'z.txt']);
// A hostile tarball: a member climbing out with "..", a symbolic link out of the directory and a member through it.
execFileSync('/usr/bin/python3', [
  '-c',
  [
    'import io, sys, tarfile',
    'with tarfile.open(sys.argv[1], "w:gz") as t:',
    '  def add(name, data=b"", link=None):',
    '    i = tarfile.TarInfo(name); i.size = len(data)',
    '    if link: i.type = tarfile.SYMTYPE; i.linkname = link',
    '    t.addfile(i, io.BytesIO(data))',
    '  add("../climbed", b"x"); add("link", link=sys.argv[2]); add("link/planted", b"y"); add("fine.txt", b"ok")',
  ].join('\n'),
  path.join(tarDir, 'evil.tar.gz'),
  path.join(tarDir, 'victim'),
]);
mkdirSync(path.join(tarDir, 'victim'));
const served: Record<string, Buffer> = {
  '/evil.tar.gz': readFileSync(path.join(tarDir, 'evil.tar.gz')),
  '/app.tar.gz': readFileSync(path.join(tarDir, 'app.tar.gz')),
  '/app.zip': readFileSync(path.join(tarDir, 'app.zip')),
  '/motd': Buffer.from('downloaded file\n'),
};
/** When each connection to /hang was closed by the client. */
const hangClosed: number[] = [];
const server = await startTestServer((req, res) => {
  if (req.method !== 'GET') {
    res.writeHead(405).end();
    return;
  }
  if (req.url === '/hang') {
    // Never answers; the test below watches for the agent giving up the connection.
    req.socket.once('close', () => hangClosed.push(Date.now()));
    return;
  }
  const body = served[req.url ?? ''];
  if (!body) {
    res.writeHead(404).end('no such thing');
    return;
  }
  res.writeHead(200, { 'content-length': body.length }).end(body);
});
t.teardown(() => server.close());

for (const { name: mode, run } of HOOK_MODES)
  t.test(`${mode}: files, commands in name order with test/cwd/env/ignoreErrors, and the metadata file`, async (t) => {
    const { root, env, at } = setup(t);
    mkdirSync(at('/srv/work'), { recursive: true });
    const log = at('/order.log');
    const init = {
      config: {
        files: {
          '/etc/app/plain.conf': { content: 'key = value\n', mode: '000640' },
          '/etc/app/data.json': { content: { a: [1, 2], b: 'x' } },
          '/etc/app/link': { content: '/etc/app/plain.conf', mode: '120777' },
          '/etc/app/b64': {
            content: Buffer.from('bytes\u0000here').toString('base64'),
            encoding: 'base64',
            mode: '0600',
          },
        },
        commands: {
          '10-second': { command: `echo second >> ${log}; echo out-2; echo err-2 >&2` },
          '02-first': { command: ['/bin/sh', '-c', `echo first >> ${log}; pwd >> ${log}`], cwd: '/srv/work' },
          '20-skipped': { command: `echo skipped >> ${log}`, test: 'test -e /nonexistent' },
          '30-env': { command: `echo "env=$ONLY:\${HOME:-unset}" >> ${log}`, env: { ONLY: 'this' } },
          '40-fails-ignored': { command: 'exit 3', ignoreErrors: 'true' },
          '50-last': { command: `echo last >> ${log}` },
        },
      },
    };
    const res = await run('cfn-init', deployment(init), { env });
    t.equal(res.code, 0, 'the hook exits 0', { stderr: res.stderr });
    t.equal(res.result.deploy_status_code, 0, 'the run succeeded', { result: res.result });
    t.equal(res.result.deploy_stdout, 'out-2\n', "the commands' stdout is the deployment's");
    t.equal(res.result.deploy_stderr, 'err-2\n');
    t.equal(
      readFileSync(log, 'utf8'),
      `first\n${at('/srv/work')}\nsecond\nenv=this:unset\nlast\n`,
      'commands ran sorted by name; cwd under the root; env replaced the environment; a false test skipped one; ignoreErrors went on',
    );
    t.equal(readFileSync(at('/etc/app/plain.conf'), 'utf8'), 'key = value\n');
    t.equal(modeOf(at('/etc/app/plain.conf')), '640');
    t.equal(
      readFileSync(at('/etc/app/data.json'), 'utf8'),
      '{\n    "a": [\n        1,\n        2\n    ],\n    "b": "x"\n}',
      'JSON content, indent 4',
    );
    t.equal(modeOf(at('/etc/app/data.json')), '644', 'a new file without mode is 0644');
    t.ok(lstatSync(at('/etc/app/link')).isSymbolicLink(), 'mode 120777 makes a symbolic link');
    t.equal(readlinkSync(at('/etc/app/link')), '/etc/app/plain.conf');
    t.same(readFileSync(at('/etc/app/b64')), Buffer.from('bytes\u0000here'), 'base64 content decoded');
    const metadata = path.join(root, 'var/cache/heat-cfntools/last_metadata');
    t.same(
      JSON.parse(readFileSync(metadata, 'utf8')),
      { 'AWS::CloudFormation::Init': init },
      "the metadata file, as upstream's hook writes it",
    );
    t.equal(modeOf(metadata), '600');
    t.equal(modeOf(path.dirname(metadata)), '700');
  });

t.test('configSets: default, nested ConfigSet references, in order', async (t) => {
  const { env, at } = setup(t);
  const log = at('/sets.log');
  const step = (name: string) => ({ commands: { a: { command: `echo ${name} >> ${log}` } } });
  const init = {
    configSets: {
      default: ['one', { ConfigSet: 'more' }, 'four'],
      more: ['two', { ConfigSet: 'last' }],
      last: 'three',
    },
    one: step('one'),
    two: step('two'),
    three: step('three'),
    four: step('four'),
    unused: step('unused'),
  };
  const res = await runHook('cfn-init', deployment(JSON.stringify(init)), { env });
  t.equal(res.result.deploy_status_code, 0, 'a config given as JSON text works too', { result: res.result });
  t.equal(readFileSync(log, 'utf8'), 'one\ntwo\nthree\nfour\n');
});

t.test(
  'a failing command stops the run: later commands and services do not run; status 1 names the command',
  async (t) => {
    const { env, at } = setup(t);
    const log = at('/stop.log');
    const init = {
      configSets: { default: ['a', 'b'] },
      a: {
        commands: {
          '1': { command: `echo one >> ${log}` },
          '2': { command: 'echo partial; echo broken >&2; exit 5' },
          '3': { command: `echo three >> ${log}` },
        },
      },
      b: { commands: { '1': { command: `echo b >> ${log}` } } },
    };
    const res = await runHook('cfn-init', deployment(init), { env });
    t.equal(res.code, 0);
    t.equal(res.result.deploy_status_code, 1);
    t.equal(res.result.deploy_stdout, 'partial\n');
    t.match(res.result.deploy_stderr, /^broken\ncfn-init: config "a" commands\.2 failed with status 5/);
    t.equal(readFileSync(log, 'utf8'), 'one\n');
  },
);

t.test('bad input: a failure result naming the resource and the cause, nothing applied', async (t) => {
  const { env, root, at, dir } = setup(t);
  mkdirSync(path.join(dir, 'outside'));
  mkdirSync(at('/etc'), { recursive: true });
  symlinkSync(path.join(dir, 'outside'), at('/etc/escape'));
  writeFileSync(at('/etc/regular'), '');
  const marker = { '/marker': { content: 'written' } };
  const cases: Array<[string, unknown, RegExp]> = [
    ['an unknown key', { config: { files: marker, comands: {} } }, /config "config": unknown key "comands"/],
    [
      'an unknown file key',
      { config: { files: { '/x': { content: 'a', mdoe: '0644' } } } },
      /files\.\/x: unknown key "mdoe"/,
    ],
    [
      'an unknown package manager',
      { config: { files: marker, packages: { pacman: { vim: [] } } } },
      /packages\.pacman: unknown package manager/,
    ],
    [
      'a path with ..',
      { config: { files: { '/etc/../../x': { content: 'a' } } } },
      /files\.\/etc\/\.\.\/\.\.\/x: must not contain "\.\."/,
    ],
    ['a relative path', { config: { files: { 'etc/x': { content: 'a' } } } }, /must be an absolute path/],
    ['a bad mode', { config: { files: { '/x': { content: 'a', mode: 'rw-r--r--' } } } }, /mode: must be an octal mode/],
    [
      'a symbolic link out of the root',
      { config: { files: { '/etc/escape/x': { content: 'a' } } } },
      /files\.\/etc\/escape\/x: \/etc\/escape\/x is refused: .*escape is a symbolic link to .*, outside /,
    ],
    [
      'a source dir through a link out of the root',
      { config: { sources: { '/etc/escape': `${server.url}/app.tar.gz` } } },
      /sources\.\/etc\/escape: \/etc\/escape is refused: .*outside /,
    ],
    ['no default configSet', { configSets: { other: ['config'] }, config: {} }, /there is no "default" configSet/],
    ['an undefined ConfigSet', { configSets: { default: [{ ConfigSet: 'nope' }] } }, /undefined ConfigSet "nope"/],
    ['a self-including ConfigSet', { configSets: { default: [{ ConfigSet: 'default' }] } }, /includes itself/],
    ['a missing config', { configSets: { default: ['nope'] } }, /config "nope": not found/],
    ['empty metadata', {}, /Init is empty/],
    [
      'a file with neither content nor source',
      { config: { files: { '/x': { mode: '0644' } } } },
      /needs "content" or "source"/,
    ],
    ['a command without command', { config: { commands: { a: { test: 'true' } } } }, /commands\.a: has no "command"/],
    ['an unknown service manager', { config: { services: { upstart: { x: {} } } } }, /unknown service manager/],
    [
      'an unknown owner',
      { config: { files: { '/x': { content: 'a', owner: 'no-such-user-cfn' } } } },
      /there is no user named "no-such-user-cfn"/,
    ],
    [
      'a command that does not exist',
      { config: { commands: { a: { command: ['/nonexistent/tool'] } } } },
      /commands\.a failed with status 127/,
    ],
    [
      'a file under a regular file (a system error)',
      { config: { files: { '/etc/regular/x': { content: 'a' } } } },
      /files\.\/etc\/regular\/x: .*regular is not a directory/,
    ],
    [
      'a cwd that does not exist',
      { config: { commands: { a: { command: 'true', cwd: '/nope' } } } },
      /commands\.a: its cwd \/nope does not exist/,
    ],
  ];
  // In-process: the same code as the executable (the modes are compared above), without a Node start per case.
  for (const [what, init, pattern] of cases) {
    const res = await runHookInProcess('cfn-init', deployment(init), { env });
    t.equal(res.code, 0, `${what}: the hook itself does not crash`, { stderr: res.stderr });
    t.equal(res.result.deploy_status_code, 1, `${what}: status 1`);
    t.match(res.result.deploy_stderr, pattern, `${what}: named`);
  }
  t.notOk(existsSync(at('/marker')), 'nothing of a config that fails validation was applied');
  t.same(
    readFileSync(path.join(root, 'var/cache/heat-cfntools/last_metadata'), 'utf8').length > 0,
    true,
    'the metadata is still written',
  );
  const notJson = await runHookInProcess('cfn-init', deployment('{not json'), { env });
  t.equal(notJson.result.deploy_status_code, 1);
  t.match(notJson.result.deploy_stderr, /the config is text but not JSON/);
});

for (const { name: mode, run } of HOOK_MODES)
  t.test(
    `${mode}: sources and file sources over HTTP; a 404 and a server that hangs fail in bounded time`,
    async (t) => {
      const { env, at } = setup(t);
      const ok = {
        config: {
          sources: { '/opt/app': `${server.url}/app.tar.gz`, '/opt/zipped': `${server.url}/app.zip` },
          files: { '/etc/motd': { source: `${server.url}/motd`, mode: '0444' } },
        },
      };
      const res = await run('cfn-init', deployment(ok), { env });
      t.equal(res.result.deploy_status_code, 0, 'downloaded and unpacked', { result: res.result, stderr: res.stderr });
      t.equal(readFileSync(at('/opt/app/app.conf'), 'utf8'), 'from the tarball\n');
      t.equal(readFileSync(at('/opt/app/sub/data.txt'), 'utf8'), 'nested\n');
      t.equal(readFileSync(at('/opt/zipped/z.txt'), 'utf8'), 'from the zip\n');
      t.equal(readFileSync(at('/etc/motd'), 'utf8'), 'downloaded file\n');
      t.equal(modeOf(at('/etc/motd')), '444');

      const missing = await run(
        'cfn-init',
        deployment({ config: { sources: { '/opt/none': `${server.url}/none.tar.gz` } } }),
        { env },
      );
      t.equal(missing.result.deploy_status_code, 1);
      t.match(
        missing.result.deploy_stderr,
        /config "config" sources\.\/opt\/none: could not download http:\/\/127\.0\.0\.1:\d+\/none\.tar\.gz: the server answered HTTP 404/,
      );

      const hang = await run(
        'cfn-init',
        deployment({ config: { files: { '/etc/hang': { source: `${server.url}/hang` } } } }),
        { env: { ...env, HEAT_CFN_INIT_FETCH_TIMEOUT: '0.3' }, timeoutMs: 30_000 },
      );
      t.equal(hang.result.deploy_status_code, 1, 'a server that never answers fails the run (timeout, then 2 retries)');
      t.match(hang.result.deploy_stderr, /files\.\/etc\/hang: could not download .*\/hang/);
      t.notOk(existsSync(at('/etc/hang')));

      const evil = await run(
        'cfn-init',
        deployment({ config: { sources: { '/opt/evil': `${server.url}/evil.tar.gz` } } }),
        { env },
      );
      t.equal(evil.result.deploy_status_code, 1, 'a tarball with members that climb out fails the run');
      t.match(
        evil.result.deploy_stderr,
        /sources\.\/opt\/evil: tar .* failed with status 2:[^]*Member name contains '\.\.'/,
      );
      t.notOk(existsSync(at('/opt/climbed')), 'nothing was written outside the directory through ".."');
      t.same(readdirSync(path.join(tarDir, 'victim')), [], 'nor through the symbolic link');

      const unknown = await run(
        'cfn-init',
        deployment({ config: { sources: { '/opt/x': `${server.url}/thing.rar` } } }),
        { env },
      );
      t.match(unknown.result.deploy_stderr, /sources\.\/opt\/x: cannot tell the archive type/);
    },
  );

t.test(
  "a config's files are replaced as one step: a failure part-way leaves every one of them as it was",
  async (t) => {
    const { env, at } = setup(t);
    mkdirSync(at('/etc/app'), { recursive: true });
    writeFileSync(at('/etc/app/kept.conf'), 'old\n');
    const init = (owner: string) => ({
      config: {
        files: {
          '/etc/app/kept.conf': { content: 'new\n' },
          '/etc/app/link': { content: '/nowhere', mode: '120777' },
          '/etc/made/deep/new.conf': { content: 'new\n' },
          '/etc/app/owned.conf': { content: 'x', owner },
          '/etc/app/later.conf': { content: 'later\n' },
        },
      },
    });
    const failed = await runHookInProcess('cfn-init', deployment(init('no-such-user-cfn')), { env });
    t.equal(failed.result.deploy_status_code, 1);
    t.match(failed.result.deploy_stderr, /files\.\/etc\/app\/owned\.conf: there is no user named "no-such-user-cfn"/);
    t.equal(readFileSync(at('/etc/app/kept.conf'), 'utf8'), 'old\n', 'a file before the failing one is not replaced');
    t.same(readdirSync(at('/etc/app')), ['kept.conf'], 'no link, no later file, no temp file left');
    t.notOk(existsSync(at('/etc/made')), 'directories made for the files are removed');

    const ok = await runHookInProcess('cfn-init', deployment(init(userInfo().username)), { env });
    t.equal(ok.result.deploy_status_code, 0, 'the same files with an owner that exists', { result: ok.result });
    t.equal(readFileSync(at('/etc/app/kept.conf'), 'utf8'), 'new\n');
    t.equal(readlinkSync(at('/etc/app/link')), '/nowhere', 'a link to nothing is staged and renamed like a file');
    t.equal(readFileSync(at('/etc/made/deep/new.conf'), 'utf8'), 'new\n');
    t.same(readdirSync(at('/etc/app')).sort(), ['kept.conf', 'later.conf', 'link', 'owned.conf']);
  },
);

t.test(
  'in-process: a deployment stopped by its timeout abandons its download at once (the connection is closed)',
  async (t) => {
    const { env } = setup(t);
    const before = hangClosed.length;
    const started = Date.now();
    const res = await runHookInProcess(
      'cfn-init',
      deployment({ config: { files: { '/etc/hang': { source: `${server.url}/hang` } } } }),
      { env: { ...env, HEAT_CFN_INIT_FETCH_TIMEOUT: '60' }, timeoutMs: 500 },
    );
    t.equal(res.code, null, 'stopped by the timeout');
    // Bounded wait for the server to see the close (the fetch timeout alone would take 60 s and 2 retries).
    for (let i = 0; i < 100 && hangClosed.length === before; i++) await new Promise((r) => setTimeout(r, 50));
    t.equal(hangClosed.length, before + 1, 'the request was aborted, not left running');
    t.ok((hangClosed.at(-1) ?? Infinity) - started < 10_000, 'soon after the timeout');
  },
);

t.test(
  'services through a recording fake systemctl: enable, start when stopped, restart after a named file changed, stop',
  async (t) => {
    const { env, dir } = setup(t);
    const bin = path.join(dir, 'bin');
    const state = path.join(dir, 'running');
    mkdirSync(bin);
    mkdirSync(state);
    const calls = path.join(dir, 'systemctl.log');
    writeFileSync(
      path.join(bin, 'systemctl'),
      [
        '#!/bin/sh',
        `echo "$*" >> ${calls}`,
        `f=${state}/$2`,
        'case "$1" in',
        '  status) [ -e "$f" ] || exit 3 ;;',
        '  start|restart) touch "$f" ;;',
        '  stop) rm -f "$f" ;;',
        'esac',
      ].join('\n'),
    );
    chmodSync(path.join(bin, 'systemctl'), 0o755);
    writeFileSync(path.join(state, 'web.service'), '');
    writeFileSync(path.join(state, 'old.service'), '');
    const fakeEnv = { ...env, PATH: `${bin}:${env.PATH}` };
    const init = (content: string) => ({
      config: {
        files: { '/etc/web.conf': { content } },
        services: {
          systemd: {
            web: { enabled: 'true', ensureRunning: true, files: ['/etc/web.conf'] },
            db: { enabled: false, ensureRunning: 'yes' },
            old: { ensureRunning: false },
          },
        },
      },
    });
    const first = await runHook('cfn-init', deployment(init('v1')), { env: fakeEnv });
    t.equal(first.result.deploy_status_code, 0, 'first run', { result: first.result });
    t.same(readFileSync(calls, 'utf8').trim().split('\n'), [
      'enable web.service',
      'status web.service',
      'restart web.service',
      'disable db.service',
      'status db.service',
      'start db.service',
      'status old.service',
      'stop old.service',
    ]);
    writeFileSync(calls, '');
    await runHook('cfn-init', deployment(init('v1')), { env: fakeEnv });
    t.same(
      readFileSync(calls, 'utf8').trim().split('\n'),
      ['enable web.service', 'status web.service', 'disable db.service', 'status db.service', 'status old.service'],
      'the same file again: no restart, nothing started or stopped',
    );
    writeFileSync(calls, '');
    await runHook('cfn-init', deployment(init('v2')), { env: fakeEnv });
    t.ok(readFileSync(calls, 'utf8').includes('restart web.service'), 'a changed file restarts the service naming it');
  },
);

for (const { name: mode, run } of HOOK_MODES)
  t.test(
    `${mode}: HEAT_CFN_INIT_CMD runs that program as upstream: metadata first, no arguments, its output as the result`,
    async (t) => {
      const { env, dir } = setup(t);
      const fake = path.join(dir, 'fake-cfn-init');
      const seen = path.join(dir, 'seen');
      const metadataDir = path.join(dir, 'meta');
      writeFileSync(
        fake,
        `#!/bin/sh\necho "args=$#" > ${seen}\ncat ${metadataDir}/last_metadata >> ${seen}\necho ran\necho warned >&2\nexit 4\n`,
      );
      chmodSync(fake, 0o755);
      const res = await run('cfn-init', deployment({ foo: 'bar' }), {
        env: { ...env, HEAT_CFN_INIT_CMD: fake, HEAT_CFN_INIT_LAST_METADATA_DIR: metadataDir },
      });
      t.same(res.result, { deploy_stdout: 'ran\n', deploy_stderr: 'warned\n', deploy_status_code: 4 });
      t.equal(readFileSync(seen, 'utf8'), 'args=0\n{"AWS::CloudFormation::Init":{"foo":"bar"}}');
      const missing = await run('cfn-init', deployment({ foo: 'bar' }), {
        env: { ...env, HEAT_CFN_INIT_CMD: '/nonexistent/cfn-init' },
      });
      t.equal(missing.result.deploy_status_code, 1);
      t.match(
        missing.result.deploy_stderr,
        /cfn-init is not installed: the command "\/nonexistent\/cfn-init" was not found/,
      );
    },
  );

t.test(
  'apt packages through a recording fake dpkg-query and apt-get: only what is missing, name=version, failure stops the run',
  async (t) => {
    const { env, dir } = setup(t);
    const bin = path.join(dir, 'bin');
    mkdirSync(bin);
    const calls = path.join(dir, 'apt.log');
    writeFileSync(
      path.join(bin, 'dpkg-query'),
      '#!/bin/sh\nprintf "present\\t1.0\\tii \\npinned\\t1.0\\tii \\n"\nexit 1\n',
    );
    writeFileSync(
      path.join(bin, 'apt-get'),
      `#!/bin/sh\necho "$DEBIAN_FRONTEND $*" >> ${calls}\n[ -z "$FAIL" ] || { echo "E: Unable to locate package nope" >&2; exit 100; }\n`,
    );
    writeFileSync(path.join(bin, 'systemctl'), `#!/bin/sh\necho "systemctl $*" >> ${calls}\n`);
    for (const f of ['dpkg-query', 'apt-get', 'systemctl']) chmodSync(path.join(bin, f), 0o755);
    const fakeEnv = { ...env, PATH: `${bin}:${env.PATH}` };
    const init = {
      config: {
        packages: { apt: { present: [], pinned: '2.0', fresh: [] } },
        services: { sysvinit: { app: { ensureRunning: true, packages: { apt: ['fresh'] } } } },
      },
    };
    const ok = await runHookInProcess('cfn-init', deployment(init), { env: fakeEnv });
    t.equal(ok.result.deploy_status_code, 0, 'installed', { result: ok.result });
    t.same(
      readFileSync(calls, 'utf8').trim().split('\n'),
      ['noninteractive -y install pinned=2.0 fresh', 'systemctl status app.service', 'systemctl restart app.service'],
      'the installed package is skipped, the pinned one installed at its version; the service naming a new package restarts',
    );
    const failed = await runHookInProcess('cfn-init', deployment(init), { env: { ...fakeEnv, FAIL: '1' } });
    t.equal(failed.result.deploy_status_code, 1);
    t.match(
      failed.result.deploy_stderr,
      /config "config" packages\.apt: apt-get -y install pinned=2\.0 fresh failed with status 100:\nE: Unable to locate package nope/,
    );
  },
);

t.test(
  'RPM packages through recording fakes of rpm, yum, dnf and zypper: the order, what rpm -q lacks, yum falling back to dnf',
  async (t) => {
    const { env, dir } = setup(t);
    const calls = path.join(dir, 'rpm.log');
    // rpm -q knows only "present" (any version) and "lib-1.2"; each tool logs its arguments, and fails with FAIL set.
    const fake = (name: string) =>
      `#!/bin/sh\necho "${name} $*" >> ${calls}\n` +
      (name === 'rpm' ? 'if [ "$1" = -q ]; then case "$2" in present|lib-1.2) exit 0 ;; *) exit 1 ;; esac; fi\n' : '') +
      '[ -z "$FAIL" ] || { echo "Error: Unable to find a match: nope" >&2; exit 1; }\n';
    const withTools = (...names: string[]) => {
      const bin = path.join(dir, names.join('-'));
      mkdirSync(bin, { recursive: true });
      for (const name of names) writeFileSync(path.join(bin, name), fake(name), { mode: 0o755 });
      return { ...env, PATH: `${bin}:${env.PATH}` };
    };
    const logged = () => {
      const lines = existsSync(calls) ? readFileSync(calls, 'utf8').trim().split('\n') : [];
      writeFileSync(calls, '');
      return lines;
    };
    const init = (packages: unknown) => deployment({ config: { packages } });

    const yum = await runHookInProcess(
      'cfn-init',
      init({
        yum: { present: [], lib: ['1.0', '1.2'], fresh: '2.0' },
        rpm: { tool: 'http://127.0.0.1:1/tool-1.0.rpm', present: 'http://127.0.0.1:1/x.rpm' },
      }),
      { env: withTools('rpm', 'yum') },
    );
    t.equal(yum.result.deploy_status_code, 0, 'installed', { result: yum.result });
    t.same(
      logged(),
      [
        'rpm -q tool',
        'rpm -U --force --nosignature http://127.0.0.1:1/tool-1.0.rpm',
        'rpm -q present',
        'rpm -q present',
        'rpm -q lib-1.2',
        'rpm -q fresh-2.0',
        'yum -y install fresh-2.0',
      ],
      'rpm (URLs) before yum; rpm -q asked for each at the newest version given; only what it lacks is installed',
    );

    const dnf = await runHookInProcess('cfn-init', init({ yum: { fresh: [] } }), { env: withTools('rpm', 'dnf') });
    t.equal(dnf.result.deploy_status_code, 0);
    t.same(logged(), ['rpm -q fresh', 'dnf -y --best install fresh'], 'no yum on PATH: dnf, as heat-cfntools does');

    const zypper = await runHookInProcess('cfn-init', init({ zypper: { fresh: [] } }), {
      env: withTools('rpm', 'zypper'),
    });
    t.equal(zypper.result.deploy_status_code, 0);
    t.same(logged(), ['rpm -q fresh', 'zypper -n install fresh']);

    const failed = await runHookInProcess('cfn-init', init({ dnf: { nope: [] } }), {
      env: { ...withTools('rpm', 'dnf'), FAIL: '1' },
    });
    t.equal(failed.result.deploy_status_code, 1);
    t.match(
      failed.result.deploy_stderr,
      /config "config" packages\.dnf: dnf -y --best install nope failed with status 1:\nError: Unable to find a match: nope/,
    );
    logged();

    const noUrl = await runHookInProcess('cfn-init', init({ rpm: { tool: [] } }), { env: withTools('rpm') });
    t.equal(noUrl.result.deploy_status_code, 1);
    t.match(noUrl.result.deploy_stderr, /packages\.rpm\.tool: give the URL of the \.rpm file/);
    const noRpm = await runHookInProcess('cfn-init', init({ rpm: { tool: 'http://127.0.0.1:1/tool.rpm' } }), { env });
    t.equal(noRpm.result.deploy_status_code, 1);
    t.match(noRpm.result.deploy_stderr, /rpm was not found: this is not an RPM system/);
  },
);

t.test('services without systemctl: recording fakes of service(8) and update-rc.d', async (t) => {
  const { env, dir } = setup(t);
  const bin = path.join(dir, 'bin');
  mkdirSync(bin);
  const calls = path.join(dir, 'sysv.log');
  writeFileSync(path.join(bin, 'service'), `#!/bin/sh\necho "service $*" >> ${calls}\n[ "$2" != status ]\n`);
  writeFileSync(path.join(bin, 'update-rc.d'), `#!/bin/sh\necho "update-rc.d $*" >> ${calls}\n`);
  for (const f of ['service', 'update-rc.d']) chmodSync(path.join(bin, f), 0o755);
  // Only the fakes on the PATH, so the machine's own systemctl is not found (in-process: no node needed).
  const res = await runHookInProcess(
    'cfn-init',
    deployment({ config: { services: { sysvinit: { ntp: { enabled: true, ensureRunning: true } } } } }),
    { env: { ...env, PATH: bin } },
  );
  t.equal(res.result.deploy_status_code, 0, 'done', { result: res.result });
  t.same(readFileSync(calls, 'utf8').trim().split('\n'), [
    'update-rc.d ntp enable',
    'service ntp status',
    'service ntp start',
  ]);
});
