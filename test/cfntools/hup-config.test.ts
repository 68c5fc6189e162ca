import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { HupConfigError } from '../../src/cfntools/cfn-errors.js';
import { loadHupConfig, watchedResources } from '../../src/cfntools/hup-config.js';
import { createPathMapper } from '../../src/util/rooted-path.js';
import type { TapTest } from '../helpers/http-test-server.js';
import { settledWithin } from '../helpers/assertions.js';

// cfn-hup's configuration: cfn-hup.conf's [main], the hooks of hooks.conf and hooks.d/*.conf, checked as a whole.

function setup(t: TapTest, files: Record<string, string>) {
  const root = t.testdir();
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), text);
  }
  return { root, paths: createPathMapper(root) };
}
const MAIN = '[main]\nstack=demo\ncredential-file=/etc/cfn/cfn-credentials\n';
const HOOK =
  '[reload]\ntriggers=post.update\npath=Resources.web.Metadata.AWS::CloudFormation::Init\naction=/opt/aws/bin/cfn-init -s demo -r web\nrunas=root\n';

t.test('main, hooks from hooks.conf and hooks.d/*.conf in name order, defaults', async (t) => {
  const { paths, root } = setup(t, {
    'etc/cfn/cfn-hup.conf': `${MAIN}region=RegionOne\ninterval=0.5\n`,
    'etc/cfn/hooks.conf': HOOK,
    'etc/cfn/hooks.d/20-b.conf':
      '[svc]\ntriggers=service.restarted\npath=Resources.db.Metadata\naction=logger restarted\n',
    'etc/cfn/hooks.d/10-a.conf':
      '[add]\ntriggers = post.add , post.remove\npath=Resources.web.Metadata.a.b\naction=true\ntimeout=5\n',
    'etc/cfn/hooks.d/notes.txt': 'not a hook file',
  });
  const config = await loadHupConfig(paths);
  t.same(config.main, {
    stack: 'demo',
    credentialFile: path.join(root, 'etc/cfn/cfn-credentials'),
    shownCredentialFile: '/etc/cfn/cfn-credentials',
    region: 'RegionOne',
    intervalMinutes: 0.5,
  });
  t.same(
    config.hooks.map((h) => [h.name, h.file, h.triggers, h.resource, h.keys, h.runas, h.timeoutSeconds]),
    [
      ['reload', '/etc/cfn/hooks.conf', ['post.update'], 'web', ['AWS::CloudFormation::Init'], 'root', 600],
      ['add', '/etc/cfn/hooks.d/10-a.conf', ['post.add', 'post.remove'], 'web', ['a', 'b'], 'root', 5],
      ['svc', '/etc/cfn/hooks.d/20-b.conf', ['service.restarted'], 'db', [], 'root', 600],
    ],
    'runas root and a 600 s timeout by default; .conf files only, in name order',
  );
  t.same(config.files, [
    '/etc/cfn/cfn-hup.conf',
    '/etc/cfn/hooks.conf',
    '/etc/cfn/hooks.d/10-a.conf',
    '/etc/cfn/hooks.d/20-b.conf',
  ]);
  t.same(watchedResources(config), ['web', 'db']);
  const defaults = await loadHupConfig(setup(t, { 'etc/cfn/cfn-hup.conf': MAIN, 'etc/cfn/hooks.conf': HOOK }).paths);
  t.equal(defaults.main.region, 'nova', "heat-cfntools' default region");
  t.equal(defaults.main.intervalMinutes, 10, "heat-cfntools' default interval");
  const other = setup(t, { 'etc/cfn/cfn-hup.conf': MAIN, 'srv/hooks/x.conf': HOOK });
  t.equal((await loadHupConfig(other.paths, '/srv/hooks')).hooks.length, 1, '-c names another hooks directory');
});

t.test('every unusable configuration is an error naming the file and section', async (t) => {
  const cases: Array<[string, Record<string, string>, RegExp]> = [
    ['no main file', { 'etc/cfn/hooks.conf': HOOK }, /cannot read \/etc\/cfn\/cfn-hup\.conf: it does not exist/],
    [
      'no hook file',
      { 'etc/cfn/cfn-hup.conf': MAIN },
      /no hook files: write \/etc\/cfn\/hooks\.conf or \/etc\/cfn\/hooks\.d\/\*\.conf/,
    ],
    ['no hooks', { 'etc/cfn/cfn-hup.conf': MAIN, 'etc/cfn/hooks.conf': '# nothing\n' }, /no hooks: add a section/],
    ['no [main]', { 'etc/cfn/cfn-hup.conf': '[other]\nx=1\n', 'etc/cfn/hooks.conf': HOOK }, /has no \[main\] section/],
    [
      'no stack',
      { 'etc/cfn/cfn-hup.conf': '[main]\ncredential-file=/c\n', 'etc/cfn/hooks.conf': HOOK },
      /\/etc\/cfn\/cfn-hup\.conf \[main\]: "stack" is missing/,
    ],
    [
      'bad interval',
      { 'etc/cfn/cfn-hup.conf': `${MAIN}interval=soon\n`, 'etc/cfn/hooks.conf': HOOK },
      /interval "soon" is not a number of minutes above 0/,
    ],
    [
      'syntax',
      { 'etc/cfn/cfn-hup.conf': MAIN, 'etc/cfn/hooks.d/bad.conf': '[h]\nno delimiter here\n' },
      /cannot parse \/etc\/cfn\/hooks\.d\/bad\.conf line 2/,
    ],
    [
      'unknown trigger',
      { 'etc/cfn/cfn-hup.conf': MAIN, 'etc/cfn/hooks.conf': HOOK.replace('post.update', 'post.updated') },
      /\/etc\/cfn\/hooks\.conf \[reload\]: unknown trigger "post\.updated" \(known: post\.add, post\.update, post\.remove, service\.restarted\)/,
    ],
    [
      'bad path',
      {
        'etc/cfn/cfn-hup.conf': MAIN,
        'etc/cfn/hooks.conf': HOOK.replace('Resources.web.Metadata', 'Resources.web.PhysicalResourceId'),
      },
      /path "Resources\.web\.PhysicalResourceId\.AWS::CloudFormation::Init" must be Resources\.<resource>\.Metadata/,
    ],
    [
      'no action',
      { 'etc/cfn/cfn-hup.conf': MAIN, 'etc/cfn/hooks.conf': HOOK.replace(/action=.*\n/, '') },
      /\[reload\]: "action" is missing/,
    ],
    [
      'lone %',
      { 'etc/cfn/cfn-hup.conf': MAIN, 'etc/cfn/hooks.conf': HOOK.replace('runas=root', 'runas=root\ntimeout=5%') },
      /a lone "%"/,
    ],
    [
      'bad timeout',
      { 'etc/cfn/cfn-hup.conf': MAIN, 'etc/cfn/hooks.conf': `${HOOK}timeout=-1\n` },
      /timeout "-1" is not a number of seconds above 0/,
    ],
  ];
  for (const [what, files, expected] of cases) {
    const err = await loadHupConfig(setup(t, files).paths).catch((e: unknown) => e);
    t.ok(err instanceof HupConfigError, `${what}: HupConfigError`);
    t.match(String((err as Error).message), expected, what);
  }
});

for (const [what, make] of [
  ['a FIFO', (file: string) => execFileSync('mkfifo', [file])],
  ['a link to /dev/zero', (file: string) => symlinkSync('/dev/zero', file)],
] as const)
  t.test(`a hook file that is ${what} is refused at once, not read`, async (t) => {
    const { root, paths } = setup(t, { 'etc/cfn/cfn-hup.conf': MAIN, 'etc/cfn/hooks.conf': HOOK });
    mkdirSync(path.join(root, 'etc/cfn/hooks.d'));
    make(path.join(root, 'etc/cfn/hooks.d/odd.conf'));
    // Read as before, the FIFO would wait for a writer forever and /dev/zero would fill the memory: bounded here.
    const err = await settledWithin(loadHupConfig(paths), 10);
    t.ok(err instanceof HupConfigError, 'HupConfigError', { err });
    t.match(String((err as Error).message), /cannot read \/etc\/cfn\/hooks\.d\/odd\.conf: not a regular file/);
  });
