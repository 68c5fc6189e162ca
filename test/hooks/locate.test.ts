import { chmodSync, chownSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { findHook, hookDirs } from '../../src/hooks/locate.js';
import { deployConfig } from '../helpers/deploy-fixtures.js';

// Hook lookup: the sanitised group in each directory in order, $HEAT_CONFIG_HOOKS first; unrunnable files reported.

function hook(dir: string, name: string, mode = 0o755): string {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, name);
  writeFileSync(file, '#!/bin/sh\necho {}\n');
  chmodSync(file, mode);
  return file;
}

t.test('directories are searched in order; the first existing entry wins', async (t) => {
  const root = t.testdir();
  const a = path.join(root, 'a');
  const b = path.join(root, 'b');
  hook(b, 'script');
  hook(b, 'puppet');
  hook(a, 'puppet');
  t.equal((await findHook('script', [a, b])).found?.path, path.join(b, 'script'));
  t.equal((await findHook('puppet', [a, b])).found?.path, path.join(a, 'puppet'));
  t.equal((await findHook('scr ipt!', [a, b])).found?.path, path.join(b, 'script'), 'the group is sanitised first');
  const missing = await findHook('chef', [a, b]);
  t.equal(missing.found, undefined);
  t.equal(missing.name, 'chef');
  t.same(missing.searched, [a, b]);
  t.equal((await findHook('!!!', [a, b])).found, undefined, 'an empty name never matches the directory itself');
});

t.test('a non-executable file, a directory or a dangling link are reported or skipped', async (t) => {
  const root = t.testdir();
  const dir = path.join(root, 'hooks');
  hook(dir, 'plain', 0o644);
  mkdirSync(path.join(dir, 'adir'));
  symlinkSync(path.join(root, 'nowhere'), path.join(dir, 'dangling'));
  const plain = await findHook('plain', [dir]);
  t.equal(plain.found?.runnable, false);
  t.match(plain.found?.problem, /not executable \(mode 0644\)/);
  const d = await findHook('adir', [dir]);
  t.equal(d.found?.runnable, false);
  t.match(d.found?.problem, 'not a regular file');
  t.equal((await findHook('dangling', [dir])).found, undefined, 'a dangling link does not exist');
  hook(dir, 'good');
  t.equal((await findHook('good', [dir])).found?.runnable, true);
});

t.test(
  "hookDirs: $HEAT_CONFIG_HOOKS (under --root) first, then [deploy] hooks_dir (upstream's order by default)",
  async (t) => {
    const root = t.testdir();
    const loaded = await deployConfig(root);
    const dirs = hookDirs(loaded.config, loaded.paths, { HEAT_CONFIG_HOOKS: '/opt/hooks' });
    t.same(dirs, [
      path.join(root, 'opt/hooks'),
      path.join(root, 'usr/libexec/heat-config/hooks'),
      path.join(root, 'var/lib/heat-config/hooks'),
    ]);
    t.same(hookDirs(loaded.config, loaded.paths, {}), dirs.slice(1));
    const dup = hookDirs(loaded.config, loaded.paths, { HEAT_CONFIG_HOOKS: '/var/lib/heat-config/hooks' });
    t.equal(dup.length, 2, 'a directory is listed once');
  },
);

t.test(
  'the trust rule: a hook, or its directory, another user owns or others can write is found but not runnable',
  async (t) => {
    const root = t.testdir();
    const dir = path.join(root, 'hooks');
    hook(dir, 'open', 0o777);
    const open = await findHook('open', [dir]);
    t.match(open.found, {
      runnable: false,
      code: 'ERR_UNTRUSTED_PATH',
      problem: `is not trusted: is writable by others (mode 0777)`,
      fix: /chown root; chmod go-w/,
    });
    const shared = path.join(root, 'shared');
    hook(shared, 'script');
    chmodSync(shared, 0o777);
    t.match((await findHook('script', [shared, dir])).found, {
      path: path.join(shared, 'script'),
      runnable: false,
      problem: `is not trusted: ${shared} is writable by others (mode 0777)`,
    });
    if (process.getuid?.() !== 0) return;
    const theirs = hook(dir, 'theirs');
    chownSync(theirs, 65534, 65534);
    t.match((await findHook('theirs', [dir])).found, { runnable: false, problem: /owned by user 65534/ });
  },
);
