import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { applyTemplates } from '../../src/apply/apply-templates.js';
import { LineSink } from '../../src/log/line-sink.js';
import { createLogger } from '../../src/log/logger.js';
import { captureLog } from '../helpers/log-capture.js';

t.test('renders the tree, reports written then unchanged', async (t) => {
  const dir = t.testdir({
    templates: {
      etc: { 'app.conf': 'host={{db.host}}\n{{#l}}- {{.}}\n{{/l}}', secret: '{{pw}}', 'secret.oac': 'mode: 0600\n' },
      'run.sh': '#!/bin/sh\ncat\n',
    },
    out: {},
  });
  chmodSync(path.join(dir, 'templates/run.sh'), 0o755);
  const { log, lines } = captureLog();
  const opts = {
    templatesDir: path.join(dir, 'templates'),
    outputDir: path.join(dir, 'out'),
    metadata: { db: { host: 'h' }, l: [1, 2], pw: 'pw' },
    strict: false,
    log,
  };
  const first = await applyTemplates(opts);
  t.same(first.written.map((p) => path.relative(opts.outputDir, p)).sort(), ['etc/app.conf', 'etc/secret', 'run.sh']);
  t.same(first.unchanged, []);
  t.equal(readFileSync(path.join(dir, 'out/etc/app.conf'), 'utf8'), 'host=h\n- 1\n- 2\n');
  t.equal(readFileSync(path.join(dir, 'out/run.sh'), 'utf8'), '{"db": {"host": "h"}, "l": [1, 2], "pw": "pw"}');
  t.match(lines.at(-1), { msg: 'templates applied', written: 3, unchanged: 0 });
  t.same(
    lines.filter((l) => l.msg === 'writing file').map((l) => path.relative(opts.outputDir, l.file as string)),
    ['run.sh', 'etc/app.conf', 'etc/secret'],
    'one line per file written, in tree order',
  );
  const second = await applyTemplates(opts);
  t.same(second.written, []);
  t.equal(second.unchanged.length, 3);
});

t.test('missing keys: one warning per key; strict mode fails and writes nothing', async (t) => {
  const dir = t.testdir({ templates: { a: '{{x}}{{y.z}}{{x}}', b: 'ok' }, out: {} });
  const { log, lines } = captureLog();
  const opts = {
    templatesDir: path.join(dir, 'templates'),
    outputDir: path.join(dir, 'out'),
    metadata: {},
    strict: false,
    log,
  };
  await applyTemplates(opts);
  const warnings = lines.filter((l) => l.level === 'warn');
  t.same(
    warnings.map((w) => [w.msg, w.key]),
    [
      ['template names a key missing from the metadata', 'x'],
      ['template names a key missing from the metadata', 'y.z'],
    ],
  );
  const dir2 = t.testdir({ templates: { a: '{{x}}', b: 'ok' }, out: {} });
  await t.rejects(
    applyTemplates({
      ...opts,
      templatesDir: path.join(dir2, 'templates'),
      outputDir: path.join(dir2, 'out'),
      strict: true,
    }),
    {
      code: 'ERR_TEMPLATE',
      message: /strict mode: .*a: x.*nothing was written/,
    },
  );
  t.same(readdirSync(path.join(dir2, 'out')), []);
});

t.test('all or nothing: any bad template, control file or path stops every write', async (t) => {
  const bad: Array<[string, Record<string, string>, RegExp, string]> = [
    [
      'mismatched section',
      { 'z-bad': '{{#a}}{{/b}}' },
      /could not render moustache template .*z-bad: line 1: closing tag/,
      'ERR_TEMPLATE',
    ],
    ['unclosed section', { 'z-bad': '{{#a}}' }, /never closed/, 'ERR_TEMPLATE'],
    ['unclosed tag', { 'z-bad': '{{a' }, /never closed/, 'ERR_TEMPLATE'],
    ['invalid UTF-8', { 'z-bad': '\u00ff' }, /not valid UTF-8/, 'ERR_TEMPLATE'],
    [
      'unknown .oac key',
      { 'z-bad': 'x', 'z-bad.oac': 'colour: red\n' },
      /unrecognised file control key 'colour'/,
      'ERR_CONTROL_FILE',
    ],
    ['bad .oac mode', { 'z-bad': 'x', 'z-bad.oac': 'mode: 0o644\n' }, /not numeric/, 'ERR_CONTROL_FILE'],
    [
      'unknown .oac user',
      { 'z-bad': 'x', 'z-bad.oac': 'owner: nobody-here-oac\n' },
      /not found in passwd database/,
      'ERR_CONTROL_FILE',
    ],
    ['failing script', { 'z-bad': '#!/bin/sh\nexit 1\n' }, /config script failed/, 'ERR_TEMPLATE'],
  ];
  for (const [name, files, message, code] of bad) {
    const dir = t.testdir({ templates: { 'a-good': 'good', ...files }, out: {} });
    if (name === 'invalid UTF-8') {
      writeFileSync(path.join(dir, 'templates/z-bad'), Buffer.from([0xff, 0xfe]));
    }
    if (name === 'failing script') chmodSync(path.join(dir, 'templates/z-bad'), 0o755);
    const { log } = captureLog();
    await t.rejects(
      applyTemplates({
        templatesDir: path.join(dir, 'templates'),
        outputDir: path.join(dir, 'out'),
        metadata: {},
        strict: false,
        log,
      }),
      { code, message },
      name,
    );
    t.same(readdirSync(path.join(dir, 'out')), [], `${name}: nothing written`);
  }
});

t.test('an output directory symlinked outside the output root is refused before any write', async (t) => {
  const dir = t.testdir({ templates: { 'a-good': 'good', etc: { passwd: 'owned' } }, out: {}, elsewhere: {} });
  symlinkSync(path.join(dir, 'elsewhere'), path.join(dir, 'out/etc'));
  const { log } = captureLog();
  await t.rejects(
    applyTemplates({
      templatesDir: path.join(dir, 'templates'),
      outputDir: path.join(dir, 'out'),
      metadata: {},
      strict: false,
      log,
    }),
    { code: 'ERR_UNSAFE_PATH' },
  );
  t.notOk(existsSync(path.join(dir, 'out/a-good')));
  t.same(readdirSync(path.join(dir, 'elsewhere')), []);
});

t.test('validate renders but writes nothing; a missing template root is an empty run', async (t) => {
  const dir = t.testdir({ templates: { a: '{{x}}' }, out: {} });
  const { log } = captureLog();
  const res = await applyTemplates({
    templatesDir: path.join(dir, 'templates'),
    outputDir: path.join(dir, 'out'),
    metadata: { x: 1 },
    strict: false,
    log,
    validate: true,
  });
  t.same(res, { written: [], unchanged: [], deleted: [] });
  t.same(readdirSync(path.join(dir, 'out')), []);
  t.same(
    await applyTemplates({
      templatesDir: path.join(dir, 'none'),
      outputDir: path.join(dir, 'out'),
      metadata: {},
      strict: true,
      log,
    }),
    { written: [], unchanged: [], deleted: [] },
  );
});

t.test(
  'allow_empty false: an empty rendering deletes the old file or is not created, each with its log line',
  async (t) => {
    const dir = t.testdir({
      templates: { old: '{{x}}', 'old.oac': 'allow_empty: false\n', new: '{{x}}', 'new.oac': 'allow_empty: false\n' },
      out: { old: 'was here' },
    });
    const { log, lines } = captureLog();
    const res = await applyTemplates({
      templatesDir: path.join(dir, 'templates'),
      outputDir: path.join(dir, 'out'),
      metadata: { x: '' },
      strict: false,
      log,
    });
    t.same(res.deleted, [path.join(dir, 'out/old')]);
    t.same(readdirSync(path.join(dir, 'out')), []);
    t.match(
      lines.filter((l) => l.level === 'info').map((l) => l.msg),
      [
        'not creating empty file: allow_empty is false',
        'deleting file: empty rendering and allow_empty is false',
        'templates applied',
      ],
    );
  },
);

t.test(
  'a failure after some files were staged leaves no temp file and no new directory, and logs no file as written',
  async (t) => {
    const dir = t.testdir({
      templates: { a: { b: { c: 'fine' } }, d: { e: 'fine' }, zz: { bad: '{{#open}}' } },
      out: { d: {} },
    });
    const { log, lines } = captureLog();
    await t.rejects(
      applyTemplates({
        templatesDir: path.join(dir, 'templates'),
        outputDir: path.join(dir, 'out'),
        metadata: {},
        strict: false,
        log,
      }),
      { code: 'ERR_TEMPLATE', message: /never closed/ },
    );
    t.same(
      readdirSync(path.join(dir, 'out'), { recursive: true }),
      ['d'],
      'the directory that was there, empty; a/ and a/b/ are gone',
    );
    t.same(
      lines.filter((l) => l.msg === 'writing file'),
      [],
    );
  },
);

t.test('CRLF templates are read with universal newlines, as Python does', async (t) => {
  const dir = t.testdir({ templates: { a: 'x\r\n{{#t}}\r\ny\r\n{{/t}}\r\nz\r' }, out: {} });
  const { log } = captureLog();
  await applyTemplates({
    templatesDir: path.join(dir, 'templates'),
    outputDir: path.join(dir, 'out'),
    metadata: { t: true },
    strict: false,
    log,
  });
  t.equal(readFileSync(path.join(dir, 'out/a'), 'utf8'), 'x\ny\nz\n');
});

/** Whether `chattr +i` works where tests write (ext4, xfs, btrfs as root: yes; tmpfs or not root: no). */
function canMakeImmutable(): boolean {
  const probe = mkdtempSync(path.join(os.tmpdir(), 'oca-chattr-'));
  const ok = spawnSync('chattr', ['+i', probe]).status === 0;
  spawnSync('chattr', ['-i', probe]);
  rmSync(probe, { recursive: true, force: true });
  return ok;
}

t.test(
  'all or nothing on write: a file that cannot be written (immutable directory) replaces no other file',
  { skip: !canMakeImmutable() && 'chattr +i is not possible here' },
  async (t) => {
    const dir = t.testdir({
      templates: { a: { x: 'new x {{v}}' }, b: { y: 'new y' } },
      out: { a: { x: 'old x' }, b: { y: 'old y' } },
    });
    const locked = path.join(dir, 'out/b');
    // An immutable directory makes even root fail to create a file in it (EPERM).
    t.equal(spawnSync('chattr', ['+i', locked]).status, 0, 'directory made immutable');
    t.teardown(() => void spawnSync('chattr', ['-i', locked]));
    const { log } = captureLog();
    const opts = {
      templatesDir: path.join(dir, 'templates'),
      outputDir: path.join(dir, 'out'),
      metadata: { v: 1 },
      strict: false,
      log,
    };
    await t.rejects(applyTemplates(opts), {
      code: 'ERR_TEMPLATE',
      message: /could not write the rendered files under .*\(EPERM.*\); no file was replaced/,
    });
    t.equal(readFileSync(path.join(dir, 'out/a/x'), 'utf8'), 'old x', 'the writable file was not replaced either');
    t.same(readdirSync(path.join(dir, 'out/a')), ['x'], 'its temp file was removed');
    spawnSync('chattr', ['-i', locked]);
    const done = await applyTemplates(opts);
    t.equal(done.written.length, 2, 'the next run writes both');
    t.equal(readFileSync(path.join(dir, 'out/a/x'), 'utf8'), 'new x 1');
  },
);

t.test(
  'a line per file, written in blocks while the run lasts; the logger is back to a write per line after it',
  async (t) => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 300; i++) files[`file-${String(i).padStart(3, '0')}.conf`] = 'v={{v}}\n';
    const dir = t.testdir({ templates: files, out: {} });
    const writes: string[] = [];
    const log = createLogger({ destination: new LineSink({ write: (s: string) => void writes.push(s) }) });
    await applyTemplates({
      templatesDir: path.join(dir, 'templates'),
      outputDir: path.join(dir, 'out'),
      metadata: { v: 1 },
      strict: false,
      log,
    });
    const lines = writes
      .join('')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { msg: string; path?: string });
    t.equal(lines.filter((l) => l.msg === 'writing file').length, 300, 'every file has its line');
    t.equal(lines.at(-1)?.msg, 'templates applied');
    t.ok(writes.length < 20, `${writes.length} writes for ${lines.length} lines`);
    const before = writes.length;
    log.info('after the run');
    t.equal(writes.length, before + 1, 'released when the run ends');
  },
);
