import { execFileSync } from 'node:child_process';
import { chmodSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { discoverTemplates } from '../../src/apply/template-tree.js';

t.test('every non-.oac file is a template (executable ones too), with its control file and output path', async (t) => {
  const root = t.testdir({
    etc: { 'a.conf': 'a', 'a.conf.oac': 'mode: 0600\n', 'orphan.oac': 'x', '.hidden': 'h', 'swap~': 's' },
    usr: { bin: { tool: 'x' } },
    top: 't',
  });
  chmodSync(path.join(root, 'usr/bin/tool'), 0o755);
  const entries = await discoverTemplates(root);
  t.same(
    entries.map((e) => e.relative),
    ['top', 'etc/.hidden', 'etc/a.conf', 'etc/swap~', 'usr/bin/tool'],
  );
  const a = entries.find((e) => e.relative === 'etc/a.conf');
  t.equal(a?.control, path.join(root, 'etc/a.conf.oac'));
  t.equal(a?.source, path.join(root, 'etc/a.conf'));
  t.equal(entries.find((e) => e.relative === 'top')?.control, undefined);
});

t.test('file symlinks are read through; directory symlinks are not followed', async (t) => {
  const root = t.testdir({ real: { f: 'x' }, other: { g: 'y' } });
  symlinkSync(path.join(root, 'real/f'), path.join(root, 'link'));
  symlinkSync(path.join(root, 'other'), path.join(root, 'dirlink'));
  const entries = await discoverTemplates(root);
  t.same(entries.map((e) => e.relative).sort(), ['link', 'other/g', 'real/f']);
});

t.test(
  'the walk is depth first in name order, files of a directory before its subdirectories; a trailing slash changes nothing',
  async (t) => {
    const root = t.testdir({ b: { z: 'z', a: { f: 'f' } }, a: { y: 'y' }, x: 'x' });
    const expected = ['x', 'a/y', 'b/z', 'b/a/f'];
    t.same(
      (await discoverTemplates(root)).map((e) => e.relative),
      expected,
    );
    t.same(
      (await discoverTemplates(`${root}/`)).map((e) => e.source),
      expected.map((r) => path.join(root, r)),
    );
  },
);

t.test('a missing root means no templates; a root that is a file is an error', async (t) => {
  const dir = t.testdir({ file: 'x' });
  t.same(await discoverTemplates(path.join(dir, 'nope')), []);
  await t.rejects(discoverTemplates(path.join(dir, 'file')), { code: 'ERR_TEMPLATE', message: /is not a directory/ });
});

t.test('dangling symlinks and special files are refused', async (t) => {
  const root = t.testdir({});
  symlinkSync(path.join(root, 'nowhere'), path.join(root, 'dangling'));
  await t.rejects(discoverTemplates(root), { code: 'ERR_TEMPLATE', message: /symlink to nothing/ });
  const root2 = t.testdir({});
  execFileSync('mkfifo', [path.join(root2, 'fifo')]);
  await t.rejects(discoverTemplates(root2), { code: 'ERR_TEMPLATE', message: /not a regular file/ });
});

t.test(
  'an unreadable template directory is an error',
  {
    skip:
      process.getuid?.() === 0
        ? 'root reads every directory; test/cli/apply-command.test.ts checks this as nobody'
        : false,
  },
  async (t) => {
    const root = t.testdir({ sub: { f: 'x' } });
    chmodSync(path.join(root, 'sub'), 0o000);
    t.teardown(() => chmodSync(path.join(root, 'sub'), 0o755));
    await t.rejects(discoverTemplates(root), { code: 'ERR_TEMPLATE', message: /cannot read the template directory/ });
  },
);
