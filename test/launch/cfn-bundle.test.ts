import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { REPO, requireBundle } from '../helpers/bundle.js';
import type { TapTest } from '../helpers/http-test-server.js';

// heat-cfntools' commands but cfn-signal run from one file of their own beside the entry (src/cli/cfn-main.ts,
// scripts/build.mjs): Node resolves, reads and links each ES module file on its own, and through the agent's shared
// chunks cfn-hup loaded 46 of them. What a command started by its name loads of the bundle, counted by a module hook.

const PRELOAD = path.join(REPO, 'test/helpers/modules-report-preload.mjs');

/** The files of dist/ that `dist/bin/<name> <args>` loaded, relative to dist/. */
function bundleFilesLoaded(t: TapTest, name: string, args: string[]): string[] {
  const dist = path.dirname(requireBundle());
  const report = path.join(t.testdir({}), 'modules');
  // tap puts its loader hooks back into any env given to spawn (NODE_OPTIONS); env(1) starts node without them.
  const res = spawnSync(
    '/usr/bin/env',
    ['-u', 'NODE_OPTIONS', process.execPath, `--import=${PRELOAD}`, path.join(dist, 'bin', name), ...args],
    { encoding: 'utf8', env: { ...process.env, OCA_MODULES_REPORT: report }, timeout: 60_000 },
  );
  t.equal(res.status, 0, `${name} ${args.join(' ')} exits 0`, { stderr: res.stderr });
  const urls = readFileSync(report, 'utf8').split('\n').filter(Boolean);
  return [...new Set(urls.map((u) => path.relative(dist, fileURLToPath(u))))].filter((f) => !f.startsWith('..'));
}

t.test(
  "cfn-hup, cfn-init and cfn-get-metadata load cfn-commands.mjs and none of the agent's command chunks",
  async (t) => {
    for (const name of ['cfn-hup', 'cfn-init', 'cfn-get-metadata']) {
      const loaded = bundleFilesLoaded(t, name, ['--help']);
      t.ok(loaded.includes('chunks/cfn-commands.mjs'), `${name} runs from chunks/cfn-commands.mjs`, { loaded });
      t.notOk(
        loaded.some((f) => /^chunks\/(main|cfn-\w+-command)-/.test(f)),
        `${name} loads neither the agent's main chunk nor a command chunk`,
        { loaded },
      );
      // The launcher, the entry and the small chunks it loads first (compile cache, stdio, the list of names, what they
      // share with the agent's commands), then the one file.
      t.ok(loaded.length <= 7, `${name} loads ${loaded.length} files of the bundle (was 46)`, { loaded });
    }
  },
);

t.test('chunks/cfn-commands.mjs imports no other file of the bundle', async (t) => {
  const text = readFileSync(path.join(path.dirname(requireBundle()), 'chunks/cfn-commands.mjs'), 'utf8');
  const imports = (pattern: RegExp) => [...text.matchAll(pattern)].map((m) => m[1]);
  t.ok(imports(/\bfrom\s*["'](node:[^"']+)["']/g).length > 0, "its imports of Node's builtins are seen");
  t.same(
    imports(/(?:\bfrom\s*|\bimport\s*\(\s*)["'](\.{1,2}\/[^"']*)["']/g),
    [],
    'no relative import, static or dynamic',
  );
});

t.test('cfn-signal stays in the agent bundle, with its signal queue', async (t) => {
  const loaded = bundleFilesLoaded(t, 'cfn-signal', ['--help']);
  t.notOk(loaded.includes('chunks/cfn-commands.mjs'), 'cfn-signal does not load cfn-commands.mjs', { loaded });
  t.ok(
    loaded.some((f) => f.startsWith('chunks/main-')),
    "cfn-signal runs through the agent's main chunk",
    { loaded },
  );
});
