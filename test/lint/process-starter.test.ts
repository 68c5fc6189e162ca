import { ESLint } from 'eslint';
import { fileURLToPath } from 'node:url';
import t from 'tap';

// The one place that starts processes (src/util/process-group.ts), kept by lint: probe sources given a path inside
// src/ are linted as if they were that file (nothing is written into the tree).

const repo = fileURLToPath(new URL('../..', import.meta.url));
const eslint = new ESLint({ cwd: repo });

async function messages(file: string, source: string): Promise<string[]> {
  const [result] = await eslint.lintText(source, { filePath: `${repo}/${file}` });
  return (result?.messages ?? [])
    .filter((m) => m.fatal || m.ruleId === 'no-restricted-imports' || m.ruleId === 'no-restricted-syntax')
    .map((m) => m.message);
}

const PROBES: Array<[string, string]> = [
  ['static import', "import { spawn } from 'node:child_process';\nexport const s = spawn;\n"],
  ['import without node:', "import { execFile } from 'child_process';\nexport const e = execFile;\n"],
  ['type import', "import type { ChildProcess } from 'node:child_process';\nexport type C = ChildProcess;\n"],
  ['import()', "export const load = async () => (await import('node:child_process')).spawn;\n"],
];

t.test('child_process is refused anywhere in src/ but the process starter', async (t) => {
  for (const file of ['src/refresh/probe.ts', 'src/apply/probe.ts', 'src/util/probe.ts', 'src/cli/probe.ts']) {
    for (const [what, source] of PROBES) {
      const found = await messages(file, source);
      t.equal(found.length, 1, `${what} in ${file}`);
      t.match(found[0], /runProcess \(src\/util\/process-group\.ts\)/);
    }
  }
});

t.test('the process starter itself may load it, and keeps the rule on node:http', async (t) => {
  for (const [what, source] of PROBES) t.same(await messages('src/util/process-group.ts', source), [], what);
  const http = await messages('src/util/process-group.ts', "import http from 'node:http';\nexport const h = http;\n");
  t.equal(http.length, 1);
  t.match(http[0], /createRequire/);
});

t.test('tests may start processes as they like', async (t) => {
  t.same(await messages('test/util/probe.test.ts', PROBES[0]![1]), []);
});
