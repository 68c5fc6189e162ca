import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import pkg from '../../package.json' with { type: 'json' };
import { requireBundle } from '../helpers/bundle.js';
import type { TapTest } from '../helpers/http-test-server.js';

// The built launcher (dist/compat-launcher.cjs) with the built compat bundle, copied without their cache: the first run
// writes the cache, later runs use it, a bad one is replaced. Real processes, as a phase script starts them.

function install(t: TapTest) {
  const dist = path.dirname(requireBundle());
  const dir = t.testdir({});
  for (const f of ['compat.cjs', 'compat-launcher.cjs']) copyFileSync(path.join(dist, f), path.join(dir, f));
  mkdirSync(path.join(dir, 'bin'));
  for (const name of ['os-apply-config', 'os-refresh-config']) symlinkSync('../compat-launcher.cjs', path.join(dir, 'bin', name));
  return { dir, cache: path.join(dir, 'compat.cjs.cache') };
}

const run = (file: string, args: string[]) => spawnSync(process.execPath, [file, ...args], { encoding: 'utf8', timeout: 30_000 });

t.test('the commands run under the name of their link; the first run writes the code cache, the next keeps it', async (t) => {
  const { dir, cache } = install(t);
  const first = run(path.join(dir, 'bin/os-apply-config'), ['--version']);
  t.equal(first.status, 0, first.stderr);
  t.equal(first.stdout.trim(), pkg.version);
  t.ok(existsSync(cache), 'cache written at exit');
  const written = statSync(cache);
  const help = run(path.join(dir, 'bin/os-refresh-config'), ['--help']);
  t.match(help.stdout, /^Usage: os-refresh-config /);
  t.equal(statSync(cache).mtimeMs, written.mtimeMs, 'an accepted cache is not rewritten');
  t.equal(statSync(cache).ino, written.ino);
});

t.test('a rejected cache is replaced by the next run', async (t) => {
  const { dir, cache } = install(t);
  writeFileSync(cache, 'garbage');
  const r = run(path.join(dir, 'bin/os-apply-config'), ['--version']);
  t.equal(r.status, 0, r.stderr);
  t.not(readFileSync(cache, 'utf8'), 'garbage', 'rewritten');
  t.ok(statSync(cache).size > 1000);
});

t.test('the build ships a cache that V8 accepts on this Node.js', async (t) => {
  const dist = path.dirname(requireBundle());
  const cache = path.join(dist, 'compat.cjs.cache');
  const before = statSync(cache);
  const r = run(path.join(dist, 'bin/os-apply-config'), ['--version']);
  t.equal(r.status, 0, r.stderr);
  t.equal(statSync(cache).mtimeMs, before.mtimeMs, 'accepted: not rewritten');
});
