import { ESLint } from 'eslint';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import t from 'tap';

// The size limits of src/ (eslint.config.js), run through ESLint itself on probe sources given a path inside src/
// (the text is linted as if it were that file; nothing is written into the tree). The tree itself is checked by
// `npm run lint`.

const repo = fileURLToPath(new URL('../..', import.meta.url));
const eslint = new ESLint({ cwd: repo });

async function sizeErrors(file: string, source: string): Promise<string[]> {
  const [result] = await eslint.lintText(source, { filePath: `${repo}/${file}` });
  return (result?.messages ?? [])
    .filter((m) => m.ruleId === 'max-lines' || m.ruleId === 'max-lines-per-function' || m.fatal)
    .map((m) => `${m.ruleId}: ${m.message}`);
}

/** A function of `statements` statement lines, with as many blank and comment lines between them. */
function functionOf(statements: number): string {
  const body = Array.from({ length: statements }, (_, i) => `  // step ${i}\n\n  total += ${i};`).join('\n');
  return `export function probe(): number {\n  let total = 0;\n${body}\n  return total;\n}\n`;
}

/** A file of `n` one-line constants, with a comment and a blank line before each. */
function fileOf(n: number): string {
  return Array.from({ length: n }, (_, i) => `// constant ${i}\n\nexport const c${i} = ${i};`).join('\n') + '\n';
}

t.test('a function over 60 lines of code is refused; blank lines and comments do not count', async (t) => {
  t.same(await sizeErrors('src/collectors/probe.ts', functionOf(56)), [], '60 lines of code, and as many comments');
  t.match(await sizeErrors('src/collectors/probe.ts', functionOf(57)), [/^max-lines-per-function: /]);
});

t.test('a file over 300 lines of code is refused; blank lines and comments do not count', async (t) => {
  t.same(await sizeErrors('src/util/probe.ts', fileOf(300)), []);
  t.match(await sizeErrors('src/util/probe.ts', fileOf(301)), [/^max-lines: /]);
});

t.test('every folder of src/ is held to the limits, with no exemption', async (t) => {
  const folders = readdirSync(`${repo}/src`, { withFileTypes: true }).filter((entry) => entry.isDirectory());
  t.ok(folders.length > 10, 'the folders of src/ are found');
  for (const folder of folders)
    t.not((await sizeErrors(`src/${folder.name}/probe.ts`, functionOf(80))).length, 0, `src/${folder.name}`);
  t.not((await sizeErrors('src/probe.ts', functionOf(80))).length, 0, 'a file directly in src/');
});
