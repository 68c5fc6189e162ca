import { spawnSync } from 'node:child_process';
import { readFileSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { REPO, requireBundle } from '../helpers/bundle.js';
import type { TapTest } from '../helpers/http-test-server.js';

// heat-cfntools' commands but cfn-signal start a CommonJS entry of their own, which requires the commands' code from
// one more file (src/cfn-bin.ts, scripts/build.mjs): no ES module loader, and none of the agent's chunks (through
// them cfn-hup once loaded 46 files). What a command started by its name loads of the bundle, counted by a preload.

const PRELOAD = path.join(REPO, 'test/helpers/modules-report-preload.mjs');

/** The files of dist/ that `dist/bin/<name> <args>` (or `file` instead of the launcher) loaded, relative to dist/. */
function bundleFilesLoaded(t: TapTest, name: string, args: string[], file?: string): string[] {
  const dist = path.dirname(requireBundle());
  // The test's directory, made here unless the test made it already (making it again would empty it).
  const report = path.join(file === undefined ? t.testdir({}) : path.dirname(file), 'modules');
  // tap puts its loader hooks back into any env given to spawn (NODE_OPTIONS); env(1) starts node without them. No
  // compile cache: on Node.js 20 the commands' file is then run through V8's code cache (code-cache.test.ts), which
  // require's cache the report reads does not list.
  const res = spawnSync(
    '/usr/bin/env',
    ['-u', 'NODE_OPTIONS', process.execPath, `--import=${PRELOAD}`, file ?? path.join(dist, 'bin', name), ...args],
    {
      encoding: 'utf8',
      env: { ...process.env, OCA_MODULES_REPORT: report, OS_CONFIG_AGENT_COMPILE_CACHE: '' },
      timeout: 60_000,
    },
  );
  t.equal(res.status, 0, `${name} ${args.join(' ')} exits 0`, { stderr: res.stderr });
  const urls = readFileSync(report, 'utf8').split('\n').filter(Boolean);
  return [...new Set(urls.map((u) => path.relative(dist, fileURLToPath(u))))].filter((f) => !f.startsWith('..')).sort();
}

t.test('cfn-hup, cfn-init and cfn-get-metadata load their CommonJS entry and one chunk, nothing else', async (t) => {
  for (const name of ['cfn-hup', 'cfn-init', 'cfn-get-metadata']) {
    const loaded = bundleFilesLoaded(t, name, ['--help']);
    t.same(loaded, [`bin/${name}`, 'cfn-commands.cjs', 'chunks/cfn-main.cjs'], `${name}: the launcher and two files`);
  }
});

t.test('a link to the entry named after a command runs that command', async (t) => {
  const dir = t.testdir({});
  const link = path.join(dir, 'cfn-hup');
  symlinkSync(path.join(path.dirname(requireBundle()), 'cfn-commands.cjs'), link);
  const res = spawnSync(process.execPath, [link, '--help'], { encoding: 'utf8', timeout: 60_000 });
  t.equal(res.status, 0, { stderr: res.stderr });
  t.match(res.stdout, /^Usage: cfn-hup \[options\]/);
});

t.test('started by another name, the entry runs the agent', async (t) => {
  const res = spawnSync(process.execPath, [path.join(path.dirname(requireBundle()), 'cfn-commands.cjs'), '--version'], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  t.equal(res.status, 0, { stderr: res.stderr });
  t.match(res.stdout, /^os-config-agent \d/);
});

t.test("the agent's entry started by a command's name runs the same chunk", async (t) => {
  const dir = t.testdir({});
  const link = path.join(dir, 'cfn-init');
  symlinkSync(requireBundle(), link);
  const loaded = bundleFilesLoaded(t, 'cfn-init', ['--help'], link);
  t.ok(loaded.includes('chunks/cfn-main.cjs'), 'cfn-init runs from chunks/cfn-main.cjs', { loaded });
  t.notOk(
    loaded.some((f) => /^chunks\/(main|cfn-\w+-command)-/.test(f)),
    "it loads neither the agent's main chunk nor a command chunk",
    { loaded },
  );
});

t.test('chunks/cfn-main.cjs requires no other file of the bundle', async (t) => {
  const text = readFileSync(path.join(path.dirname(requireBundle()), 'chunks/cfn-main.cjs'), 'utf8');
  const loads = (pattern: RegExp) => [...text.matchAll(pattern)].map((m) => m[1]);
  t.ok(loads(/\brequire\(\s*["'](node:[^"']+)["']\s*\)/g).length > 0, "its requires of Node's builtins are seen");
  t.same(loads(/(?:\brequire\(\s*|\bimport\s*\(\s*|\bfrom\s*)["'](\.{1,2}\/[^"']*)["']/g), [], 'no relative load');
  t.same(loads(/\bimport\s*\(\s*["']([^"']*)["']/g), [], 'no import() at all, which would start the ES module loader');
});

t.test('cfn-signal stays in the agent bundle, with its signal queue', async (t) => {
  const loaded = bundleFilesLoaded(t, 'cfn-signal', ['--help']);
  t.notOk(loaded.includes('chunks/cfn-main.cjs'), 'cfn-signal does not load chunks/cfn-main.cjs', { loaded });
  t.ok(
    loaded.some((f) => f.startsWith('chunks/main-')),
    "cfn-signal runs through the agent's main chunk",
    { loaded },
  );
});
