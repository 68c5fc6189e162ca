import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { runProcess } from '../helpers/bundle.js';
import { HOOKS_DIR } from './hook-process.js';

// heat-agents' own hook tests (tests/test_hook_<group>.py of a heat-agents checkout named by HEAT_AGENTS_DIR) run
// against our dist/hooks/<group>: the checkout is copied into a scratch directory, each
// heat-config-<group>/install.d/hook-<group>.py there is replaced by a link to our built hook, and Debian's Python runs
// the test module with unittest, one result line per test case. Nothing of the checkout is kept. A test module that
// loads the hook as a Python module (chef, kubelet) instead of running it as a program is reported and not run: our
// hooks are not Python. Tests upstream itself skips stay skipped.

const PYTHON = '/usr/bin/python3';
const checkout = process.env.HEAT_AGENTS_DIR;
/** Any result but these fails: an upstream skip is upstream's decision. */
const PASSING = new Set(['ok', 'skipped']);

function whyNot(): string | undefined {
  if (!checkout)
    return 'HEAT_AGENTS_DIR is not set: point it at a heat-agents checkout (git clone https://opendev.org/openstack/heat-agents) to run its hook tests against dist/hooks';
  if (!existsSync(path.join(checkout, 'tests/common.py'))) return `${checkout} is not a heat-agents checkout`;
  if (!existsSync(path.join(HOOKS_DIR, 'script'))) return `${HOOKS_DIR} is not built: npm run build`;
  const probe = spawnSync(PYTHON, ['-c', 'import testtools, fixtures, yaml'], { timeout: 30_000 });
  if (probe.status !== 0)
    return `${PYTHON} lacks testtools, fixtures or yaml: apt-get install python3-testtools python3-fixtures python3-yaml`;
  return undefined;
}

/** True when the module runs the hook as a program (run_cmd on hook_path), not as a Python module. */
function runsHookAsProgram(source: string): boolean {
  return (
    /run_cmd\(\s*\[self\.hook_path\]/.test(source) &&
    !/load_module|spec_from_file_location|from tests import hook_/.test(source)
  );
}

/** unittest -v's lines: "test_x (tests.mod.Class.test_x) ... ok|FAIL|ERROR|skipped '...'" (Python 3.11 form). */
function parseResults(stderr: string): Map<string, string> {
  const results = new Map<string, string>();
  const line = /^(\w+) \(([\w.]+)\)(?:\n.*?)? \.\.\. (ok|FAIL|ERROR|skipped.*|expected failure|unexpected success)$/gm;
  for (const m of stderr.matchAll(line)) results.set(`${m[2]}`, m[3]!.startsWith('skipped') ? 'skipped' : m[3]!);
  return results;
}

const skip = whyNot();
t.test(
  "heat-agents' own hook tests pass against our built hooks",
  { skip: skip ?? false, timeout: 600_000 },
  async (t) => {
    const tree = path.join(t.testdir(), 'heat-agents');
    cpSync(checkout!, tree, {
      recursive: true,
      filter: (src) => !/\/(\.git|\.tox|__pycache__|\.stestr)(\/|$)/.test(src.slice(checkout!.length)),
    });
    const modules = readdirSync(path.join(tree, 'tests'))
      .filter((f) => /^test_hook_.*\.py$/.test(f))
      .sort();
    t.ok(modules.length > 0, 'the checkout has hook tests');
    const summary: string[] = [];
    for (const file of modules) {
      const module = file.slice(0, -3);
      const group = module.slice('test_hook_'.length).replace(/_/g, '-');
      const source = readFileSync(path.join(tree, 'tests', file), 'utf8');
      if (!runsHookAsProgram(source)) {
        summary.push(`${module}: not run (loads the hook as a Python module, not as a program)`);
        continue;
      }
      const hook = path.join(tree, `heat-config-${group}/install.d/hook-${group}.py`);
      t.ok(existsSync(path.join(HOOKS_DIR, group)), `we have a hook for ${group}`);
      rmSync(hook, { force: true });
      symlinkSync(path.join(HOOKS_DIR, group), hook);
      const run = await runProcess(PYTHON, ['-m', 'unittest', '-v', `tests.${module}`], {
        timeoutMs: 240_000,
        env: {
          // The hooks' #! line finds this node; nothing else of this process's environment reaches them.
          PATH: `${path.dirname(process.execPath)}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`,
          HOME: tree,
          LANG: 'C.UTF-8',
          PYTHONDONTWRITEBYTECODE: '1',
        },
        cwd: tree,
      });
      const results = parseResults(run.stderr);
      t.ok(results.size > 0, `${module}: unittest reported its cases`, { stderr: run.stderr.slice(-4000) });
      for (const [name, result] of results) {
        summary.push(`${name}: ${result}`);
        t.ok(PASSING.has(result), `${name}: ${result}`, { stderr: run.stderr.slice(-4000) });
      }
      t.equal(run.code, 0, `${module}: unittest exits 0`, { stderr: run.stderr.slice(-4000) });
    }
    t.comment(`per test:\n${summary.join('\n')}`);
  },
);
