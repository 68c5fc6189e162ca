import { ESLint } from 'eslint';
import { fileURLToPath } from 'node:url';
import t from 'tap';

// The layer rule of eslint.config.js, run through ESLint itself on probe sources given a path inside src/ (the text
// is linted as if it were that file; nothing is written into the tree). The tree itself is checked by `npm run lint`.

const repo = fileURLToPath(new URL('../..', import.meta.url));
const eslint = new ESLint({ cwd: repo });
const RULE = '@typescript-eslint/no-restricted-imports';

async function layerErrors(file: string, source: string): Promise<string[]> {
  const [result] = await eslint.lintText(source, { filePath: `${repo}/${file}` });
  return (result?.messages ?? []).filter((m) => m.ruleId === RULE).map((m) => m.message);
}

t.test('a lower layer importing an upper one is an error, type-only imports included', async (t) => {
  const cases: Array<[string, string]> = [
    ['src/deploy/probe.ts', "import type { PipelineContext } from '../daemon/pipeline.js';\nexport type P = PipelineContext;\n"],
    ['src/deploy/hooks/groups/probe.ts', "import { run } from '../../../cli/main.js';\nexport const r = run;\n"],
    ['src/self-config/probe.ts', "import type { AfterCollectHook } from '../daemon/agent.js';\nexport type H = AfterCollectHook;\n"],
    ['src/http/probe.ts', "import { loadConfig } from '../config/load.js';\nexport const l = loadConfig;\n"],
    ['src/log/probe.ts', "export { HttpError } from '../http/http-error.js';\n"],
    ['src/collectors/probe.ts', "import { MetadataCache } from '../cache/metadata-cache.js';\nexport const m = MetadataCache;\n"],
    ['src/errors.ts', "import { x } from './util/x.js';\nexport const y = x;\n"],
  ];
  for (const [file, source] of cases) {
    const errors = await layerErrors(file, source);
    t.equal(errors.length, 1, `${file}: ${source.split('\n')[0]}`);
    t.match(errors[0] ?? '', /is below .* in the layer order/);
  }
});

t.test('imports within a layer and downwards pass', async (t) => {
  const cases: Array<[string, string]> = [
    ['src/deploy/probe.ts', "import type { PipelineContext } from '../collectors/cycle.js';\nimport { AgentError } from '../errors.js';\nexport type P = PipelineContext;\nexport const e = AgentError;\n"],
    ['src/deploy/hooks/groups/probe.ts', "import { applyTemplates } from '../../../apply/apply-templates.js';\nimport { x } from '../../deployment.js';\nexport const a = [applyTemplates, x];\n"],
    ['src/daemon/probe.ts', "import { collectAll } from './collect-all.js';\nimport { deployFromPairs } from '../deploy/deploy-step.js';\nexport const c = [collectAll, deployFromPairs];\n"],
    ['src/cli/probe.ts', "import { selfConfigHook } from '../self-config/self-config-hook.js';\nexport const s = selfConfigHook;\n"],
    ['src/bin.ts', "import { main } from './cli/main.js';\nexport const m = main;\n"],
  ];
  for (const [file, source] of cases) t.same(await layerErrors(file, source), [], file);
});
