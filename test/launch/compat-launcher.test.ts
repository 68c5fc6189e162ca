import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import pkg from '../../package.json' with { type: 'json' };
import { requireBundle } from '../helpers/bundle.js';
import type { TapTest } from '../helpers/http-test-server.js';

// The built launcher (dist/compat-launcher.cjs) with the built bundles of the compatibility commands, copied without
// their caches: the first run of a command writes its cache, later runs use it, a bad one is replaced. Real processes,
// as a phase script starts them.

const COMMANDS = ['os-apply-config', 'os-refresh-config'];

function install(t: TapTest) {
  const dist = path.dirname(requireBundle());
  const dir = t.testdir({});
  for (const f of ['compat-launcher.cjs', ...COMMANDS.map((n) => `${n}.cjs`)]) copyFileSync(path.join(dist, f), path.join(dir, f));
  mkdirSync(path.join(dir, 'bin'));
  for (const name of COMMANDS) symlinkSync('../compat-launcher.cjs', path.join(dir, 'bin', name));
  return { dir, cache: (name: string) => path.join(dir, `${name}.cjs.cache`) };
}

const run = (file: string, args: string[]) => spawnSync(process.execPath, [file, ...args], { encoding: 'utf8', timeout: 30_000 });

t.test('each command runs its own bundle under the name of its link; its first run writes its code cache, the next keeps it', async (t) => {
  const { dir, cache } = install(t);
  const first = run(path.join(dir, 'bin/os-apply-config'), ['--version']);
  t.equal(first.status, 0, first.stderr);
  t.equal(first.stdout.trim(), pkg.version);
  t.ok(existsSync(cache('os-apply-config')), 'cache written at exit');
  t.notOk(existsSync(cache('os-refresh-config')), 'the other command\'s bundle was not run');
  const written = statSync(cache('os-apply-config'));
  const help = run(path.join(dir, 'bin/os-apply-config'), ['--help']);
  t.match(help.stdout, /^Usage: os-apply-config /);
  t.equal(statSync(cache('os-apply-config')).mtimeMs, written.mtimeMs, 'an accepted cache is not rewritten');
  t.equal(statSync(cache('os-apply-config')).ino, written.ino);
  const refresh = run(path.join(dir, 'bin/os-refresh-config'), ['--help']);
  t.equal(refresh.status, 0, refresh.stderr);
  t.match(refresh.stdout, /^Usage: os-refresh-config /);
  t.match(refresh.stdout, /--print-phases/);
  t.ok(existsSync(cache('os-refresh-config')), 'its own cache');
});

t.test('each bundle holds its own command only', async (t) => {
  const dist = path.dirname(requireBundle());
  const apply = readFileSync(path.join(dist, 'os-apply-config.cjs'), 'utf8');
  const refresh = readFileSync(path.join(dist, 'os-refresh-config.cjs'), 'utf8');
  t.match(apply, /--print-templates/);
  t.notMatch(apply, /--print-phases/, 'no phase runner in the apply bundle');
  t.match(refresh, /--print-phases/);
  t.notMatch(refresh, /--print-templates/, 'no renderer in the refresh bundle');
  for (const [name, text] of [['os-apply-config', apply], ['os-refresh-config', refresh]] as const) {
    t.notMatch(text, /DescribeStackResource|deploy_status_code/, `${name}: no collector or deployment code`);
  }
});

t.test('started under any other name, the launcher says how to run it and exits 2', async (t) => {
  const { dir } = install(t);
  const r = run(path.join(dir, 'compat-launcher.cjs'), ['--version']);
  t.equal(r.status, 2);
  t.match(r.stderr, /started as "compat-launcher\.cjs".*os-apply-config or os-refresh-config/);
  t.equal(r.stdout, '');
});

t.test('a rejected cache is replaced by the next run', async (t) => {
  const { dir, cache } = install(t);
  writeFileSync(cache('os-refresh-config'), 'garbage');
  const r = run(path.join(dir, 'bin/os-refresh-config'), ['--version']);
  t.equal(r.status, 0, r.stderr);
  t.not(readFileSync(cache('os-refresh-config'), 'utf8'), 'garbage', 'rewritten');
  t.ok(statSync(cache('os-refresh-config')).size > 1000);
});

t.test('the build ships, for each command, a cache that V8 accepts on this Node.js', async (t) => {
  const dist = path.dirname(requireBundle());
  for (const name of COMMANDS) {
    const cache = path.join(dist, `${name}.cjs.cache`);
    const before = statSync(cache);
    const r = run(path.join(dist, 'bin', name), ['--version']);
    t.equal(r.status, 0, r.stderr);
    t.equal(statSync(cache).mtimeMs, before.mtimeMs, `${name}: accepted, not rewritten`);
  }
});
