import {
  chmodSync,
  existsSync,
  lchownSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import t from 'tap';
import type { TapTest } from '../../helpers/http-test-server.js';
import { DEPLOY_INPUTS, SECRET_INPUTS, SYSTEM_PATH, assertNoSecrets, modeOf, HOOK_MODES } from '../hook-process.js';

// The json-file hook: each file of the config written with its data, as upstream's hook-json-file.py writes it;
// bad names and failed writes leave every file as it was.

const isRoot = process.getuid?.() === 0;

function setup(t: TapTest) {
  const dir = t.testdir();
  const root = path.join(dir, 'root');
  mkdirSync(root);
  // Under OS_CONFIG_AGENT_ROOT, as the agent runs hooks under --root: "/etc/x.json" lands in <root>/etc/x.json.
  return { dir, root, env: { PATH: SYSTEM_PATH, OS_CONFIG_AGENT_ROOT: root } };
}

const deployment = (config: unknown) => ({
  id: 'json-0001',
  name: 'files',
  group: 'json-file',
  options: {},
  inputs: [...DEPLOY_INPUTS, ...SECRET_INPUTS],
  outputs: [],
  config,
});

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: each file gets its data as upstream writes it; directories made 0700`, async (t) => {
    const { root, env } = setup(t);
    mkdirSync(path.join(root, 'etc'));
    const existing = path.join(root, 'etc', 'kept-mode.json');
    writeFileSync(existing, 'old content that is longer than the new one');
    chmodSync(existing, 0o640);
    const config = {
      '/etc/app/conf.json': {
        zeta: 1,
        alpha: { b: [1, 'two', null, true, {}, []], a: 'é ☃ 😀\u007f\u0001' },
        '10': 'ten',
        '2': 'two',
      },
      '/etc//kept-mode.json': 'short',
      '/var/lib/x/list.json': [],
    };
    const run = await runIn('json-file', deployment(config), { env });
    t.same(run.result, { deploy_stdout: '', deploy_stderr: '', deploy_status_code: 0 }, "upstream's result", {
      stderr: run.stderr,
    });
    const conf = path.join(root, 'etc/app/conf.json');
    t.equal(
      readFileSync(conf, 'utf8'),
      [
        '{',
        '    "10": "ten",',
        '    "2": "two",',
        '    "alpha": {',
        '        "a": "\\u00e9 \\u2603 \\ud83d\\ude00\\u007f\\u0001",',
        '        "b": [',
        '            1,',
        '            "two",',
        '            null,',
        '            true,',
        '            {},',
        '            []',
        '        ]',
        '    },',
        '    "zeta": 1',
        '}',
      ].join('\n'),
      "Python's json.dump(indent=4, sort_keys=True): string-sorted keys, ASCII escapes, no final newline",
    );
    t.same(JSON.parse(readFileSync(conf, 'utf8')), config['/etc/app/conf.json'], 'the same data read back');
    t.equal(modeOf(conf), '600', 'a new file is private');
    t.equal(modeOf(path.join(root, 'etc/app')), '700', 'a missing directory is made 0700, as upstream');
    t.equal(readFileSync(existing, 'utf8'), '"short"', 'an existing file is replaced whole');
    t.equal(modeOf(existing), '640', 'an existing file keeps its mode');
    t.equal(readFileSync(path.join(root, 'var/lib/x/list.json'), 'utf8'), '[]');
    t.same(readdirSync(path.join(root, 'etc')).sort(), ['app', 'kept-mode.json'], 'no temp file left');
    t.match(run.stderr, `file written file=${conf}`);
    assertNoSecrets(t, run.stderr, 'the log');
  });

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: a config that is not an object is a failure result`, async (t) => {
    const { env } = setup(t);
    const cases = [
      [['/etc/a.json'], 'a list'],
      ['/etc/a.json', 'a string'],
      [null, 'null'],
      [7, 'a number'],
    ] as const;
    // The check is the same code either way; the executable runs one case (each start costs about a second).
    for (const [config, shown] of mode === 'executable' ? cases.slice(0, 1) : cases) {
      const run = await runIn('json-file', deployment(config), { env });
      t.equal(run.code, 0, 'no crash');
      t.equal(run.result.deploy_status_code, 1);
      t.equal(
        run.result.deploy_stderr,
        `the json-file config must be an object mapping absolute file paths to their data, not ${shown}`,
      );
    }
  });

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: bad names are all reported and nothing is written`, async (t) => {
    const { root, env } = setup(t);
    mkdirSync(path.join(root, 'etc'));
    writeFileSync(path.join(root, 'etc/plain'), 'a file');
    mkdirSync(path.join(root, 'etc/dir.json'));
    const run = await runIn(
      'json-file',
      deployment({
        '/etc/good.json': { fine: true },
        'relative/a.json': 1,
        '/etc/../escape.json': 2,
        '/etc/dir/': 3,
        '/etc/plain/under.json': 4,
        '/etc/dir.json': 5,
        '/etc/good2.json': 6,
        '/etc//good2.json': 7,
      }),
      { env },
    );
    t.equal(run.code, 0);
    t.equal(run.result.deploy_status_code, 1);
    const stderr = String(run.result.deploy_stderr);
    t.match(stderr, /^the json-file config names files that are not written \(nothing was written\): /);
    t.match(stderr, '"relative/a.json": not an absolute path');
    t.match(stderr, '"/etc/../escape.json": has a ".." segment');
    t.match(stderr, '"/etc/dir/": names a directory, not a file');
    t.match(stderr, `"/etc/plain/under.json": ${path.join(root, 'etc/plain')} is not a directory`);
    t.match(stderr, `"/etc/dir.json": ${path.join(root, 'etc/dir.json')} is a directory`);
    t.match(stderr, '"/etc//good2.json": names the same file as "/etc/good2.json"');
    t.notOk(existsSync(path.join(root, 'etc/good.json')), 'the good file is not written either');
    t.notOk(existsSync(path.join(root, 'escape.json')));
    t.same(readdirSync(path.join(root, 'etc')).sort(), ['dir.json', 'plain']);
  });

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(
    `${mode}: an unwritable directory: a failure naming the file and the cause, nothing half-written`,
    async (t) => {
      const { dir, env } = setup(t);
      const good = path.join(dir, 'good.json');
      const made = path.join(dir, 'made');
      // /proc refuses new files to everyone, root included; without OS_CONFIG_AGENT_ROOT the names are used as they are.
      const run = await runIn(
        'json-file',
        deployment({ [good]: 1, [path.join(made, 'deep/x.json')]: 2, '/proc/os-config-agent-test.json': 3 }),
        {
          env: { PATH: env.PATH },
        },
      );
      t.equal(run.code, 0, 'no crash');
      t.equal(run.result.deploy_status_code, 1);
      t.equal(
        run.result.deploy_stderr,
        'could not write /proc/os-config-agent-test.json: ENOENT: no such file or directory; no file was changed',
      );
      t.notOk(existsSync(good), 'the file staged before it is not written');
      t.notOk(existsSync(made), 'the directories made for it are removed');
      t.same(readdirSync(dir), ['root'], 'no temp file left');
    },
  );

function linkSetup(t: TapTest) {
  const { dir, root, env } = setup(t);
  const real = path.join(root, 'srv/real');
  mkdirSync(path.join(real, 'conf.d'), { recursive: true });
  writeFileSync(path.join(real, 'target.json'), 'old');
  chmodSync(path.join(real, 'target.json'), 0o644);
  mkdirSync(path.join(root, 'etc'));
  symlinkSync(real, path.join(root, 'etc/linked'));
  symlinkSync(path.join(real, 'target.json'), path.join(root, 'etc/file-link.json'));
  return { dir, root, real, env };
}

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: a symbolic link that leads out of the root is refused; nothing is written outside it`, async (t) => {
    const { dir, root, env } = linkSetup(t);
    const outside = path.join(dir, 'elsewhere');
    mkdirSync(outside);
    writeFileSync(path.join(outside, 'passwd.json'), 'theirs');
    symlinkSync(outside, path.join(root, 'etc/app'));
    symlinkSync('../../elsewhere/passwd.json', path.join(root, 'etc/relative.json'));
    const run = await runIn(
      'json-file',
      deployment({ '/etc/app/conf.json': 1, '/etc/relative.json': 2, '/etc/inside.json': 3 }),
      { env },
    );
    t.equal(run.result.deploy_status_code, 1);
    t.match(
      run.result.deploy_stderr,
      `"/etc/app/conf.json": ${path.join(root, 'etc/app')} is a symbolic link to ${outside}, outside ${root}`,
    );
    t.match(
      run.result.deploy_stderr,
      `"/etc/relative.json": ${path.join(root, 'etc/relative.json')} is a symbolic link`,
    );
    t.same(readdirSync(outside), ['passwd.json'], 'nothing new outside the root');
    t.equal(readFileSync(path.join(outside, 'passwd.json'), 'utf8'), 'theirs');
    t.notOk(existsSync(path.join(root, 'etc/inside.json')), 'nothing written at all');
  });

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: symbolic links owned by the agent's user are followed, as upstream`, async (t) => {
    const { root, real, env } = linkSetup(t);
    symlinkSync(path.join(real, 'nothing.json'), path.join(root, 'etc/dangling.json'));
    const ok = await runIn(
      'json-file',
      deployment({ '/etc/linked/conf.d/a.json': { a: 1 }, '/etc/file-link.json': { b: 2 } }),
      { env },
    );
    t.equal(ok.result.deploy_status_code, 0, 'trusted links followed', { result: ok.result });
    t.equal(
      readFileSync(path.join(real, 'conf.d/a.json'), 'utf8'),
      '{\n    "a": 1\n}',
      'written through the directory link',
    );
    t.equal(
      readFileSync(path.join(real, 'target.json'), 'utf8'),
      '{\n    "b": 2\n}',
      "the link's file gets the data, as upstream",
    );
    t.ok(lstatSync(path.join(root, 'etc/file-link.json')).isSymbolicLink(), 'the link itself stays a link');
    t.equal(modeOf(path.join(real, 'target.json')), '644', "the file's mode is kept");

    symlinkSync('loop-b', path.join(root, 'etc/loop-a'));
    symlinkSync('loop-a', path.join(root, 'etc/loop-b'));
    const dangling = await runIn('json-file', deployment({ '/etc/dangling.json': 1, '/etc/loop-a/x.json': 2 }), {
      env,
    });
    t.equal(dangling.result.deploy_status_code, 1);
    t.match(
      dangling.result.deploy_stderr,
      `"/etc/dangling.json": ${path.join(root, 'etc/dangling.json')} is a symbolic link to nothing`,
    );
    t.match(dangling.result.deploy_stderr, '"/etc/loop-a/x.json": more than 40 symbolic links on the way');
  });

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(
    `${mode}: symbolic links owned by another user are refused`,
    {
      skip: isRoot ? false : 'needs root to give a link to another user',
    },
    async (t) => {
      const { root, real, env } = linkSetup(t);
      // Another user's link could point anywhere: the kernel's protected_symlinks rule. 65534 is nobody.
      lchownSync(path.join(root, 'etc/linked'), 65534, 65534);
      lchownSync(path.join(root, 'etc/file-link.json'), 65534, 65534);
      // A trusted link leading through another user's link is refused too.
      symlinkSync(path.join(root, 'etc/linked'), path.join(root, 'etc/chain'));
      const refused = await runIn(
        'json-file',
        deployment({
          '/etc/linked/conf.d/b.json': 1,
          '/etc/file-link.json': 3,
          '/etc/fine.json': 4,
          '/etc/chain/conf.d/c.json': 5,
        }),
        { env },
      );
      t.equal(refused.result.deploy_status_code, 1, 'refused');
      t.match(refused.result.deploy_stderr, `${path.join(root, 'etc/linked')} is a symbolic link owned by user 65534`);
      t.match(
        refused.result.deploy_stderr,
        `${path.join(root, 'etc/file-link.json')} is a symbolic link owned by user 65534`,
      );
      t.match(
        refused.result.deploy_stderr,
        `"/etc/chain/conf.d/c.json": ${path.join(root, 'etc/linked')} is a symbolic link owned by user 65534`,
      );
      t.notOk(existsSync(path.join(real, 'conf.d/b.json')));
      t.notOk(existsSync(path.join(root, 'etc/fine.json')), 'nothing written');
      t.equal(readFileSync(path.join(real, 'target.json'), 'utf8'), 'old', 'the file is unchanged');
    },
  );
