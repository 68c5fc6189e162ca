import { ESLint } from 'eslint';
import { fileURLToPath } from 'node:url';
import t from 'tap';

// The layer graph of eslint.layers.js, run through ESLint itself on probe sources given a path inside src/ (the text
// is linted as if it were that file; nothing is written into the tree). The tree itself is checked by `npm run lint`.

const repo = fileURLToPath(new URL('../..', import.meta.url));
const eslint = new ESLint({ cwd: repo });
const RULE = 'layers/imports';
const graphFile = new URL('../../eslint.layers.js', import.meta.url).href;
const { LAYERS, TYPE_ONLY } = (await import(graphFile)) as {
  LAYERS: Record<string, readonly string[]>;
  TYPE_ONLY: Record<string, readonly string[] | undefined>;
};

async function layerErrors(file: string, source: string): Promise<string[]> {
  const [result] = await eslint.lintText(source, { filePath: `${repo}/${file}` });
  return (result?.messages ?? []).filter((m) => m.ruleId === RULE || m.fatal).map((m) => m.message);
}

/** A probe importing a value of `target` (a path relative to src/) from `file`. */
function valueImport(file: string, target: string): string {
  const depth = file.split('/').length - 2;
  const prefix = depth === 0 ? './' : '../'.repeat(depth);
  return `import { x } from '${prefix}${target}';\nexport const y = x;\n`;
}

function typeImport(file: string, target: string): string {
  const depth = file.split('/').length - 2;
  const prefix = depth === 0 ? './' : '../'.repeat(depth);
  return `import type { X } from '${prefix}${target}';\nexport type Y = X;\n`;
}

t.test('the rules that keep the architecture', async (t) => {
  const refused: Array<[string, string, string]> = [
    // Each hook is also a standalone executable: nothing of the agent's state, signals, pass or status.
    ['src/hooks/groups/probe.ts', 'state/store.js', 'hooks may not import state'],
    ['src/hooks/kit/probe.ts', 'signals/outbox.js', 'hooks may not import signals'],
    ['src/hooks/host/probe.ts', 'deploy/dispatch.js', 'hooks may not import deploy'],
    ['src/hooks/probe.ts', 'status/report.js', 'hooks may not import status'],
    // Heat's formats depend on nothing but the foundation.
    ['src/heat/probe.ts', 'state/record.js', 'heat may not import state'],
    ['src/heat/probe.ts', 'hooks/contract.js', 'heat may not import hooks'],
    // The state machine knows nothing of delivery; delivery nothing of the pass.
    ['src/state/probe.ts', 'signals/outbox.js', 'state may not import signals'],
    ['src/signals/transports/probe.ts', 'deploy/dispatch.js', 'signals may not import deploy'],
    ['src/signals/probe.ts', 'collectors/zaqar.js', 'signals may not import collectors'],
    // status reads; it never runs anything.
    ['src/status/probe.ts', 'deploy/dispatch.js', 'status may not import deploy'],
    ['src/status/probe.ts', 'hooks/registry.js', 'status may not import hooks'],
    // The foundation, bottom up.
    ['src/http/probe.ts', 'config/load.js', 'http may not import config'],
    ['src/log/probe.ts', 'http/http-error.js', 'log may not import http'],
    ['src/errors.ts', 'util/x.js', 'errors.ts may not import util'],
    ['src/collectors/probe.ts', 'cache/metadata-cache.js', 'collectors may not import cache'],
    ['src/self-config/probe.ts', 'daemon/agent.js', 'self-config may not import daemon'],
  ];
  for (const [file, target, message] of refused) {
    t.same(
      await layerErrors(file, valueImport(file, target)),
      [`${message} (the layer graph in eslint.layers.js): move what is needed down, or declare an interface here`],
      `${file} -> ${target}`,
    );
    t.equal(
      (await layerErrors(file, typeImport(file, target))).length,
      1,
      `${file} -> ${target}, types only, is refused too`,
    );
  }
});

t.test(
  'the idle daemon: deploy, signals, apply, refresh and hooks only as types (their code is loaded with import())',
  async (t) => {
    for (const target of [
      'deploy/deploy-step.js',
      'signals/cfn-signal-queue/send.js',
      'apply/apply-templates.js',
      'refresh/run-refresh.js',
      'hooks/registry.js',
    ]) {
      const errors = await layerErrors('src/daemon/probe.ts', valueImport('src/daemon/probe.ts', target));
      t.equal(errors.length, 1, `a value from ${target} is refused`);
      t.match(errors[0] ?? '', /only as types, and load it with import\(\)/);
      t.same(
        await layerErrors('src/daemon/probe.ts', typeImport('src/daemon/probe.ts', target)),
        [],
        `a type from ${target} passes`,
      );
      const mixed = `import { type X, y } from '../${target}';\nexport type Z = X;\nexport const w = y;\n`;
      t.equal(
        (await layerErrors('src/daemon/probe.ts', mixed)).length,
        1,
        `a value beside a type from ${target} is refused`,
      );
    }
    t.same(
      await layerErrors(
        'src/daemon/probe.ts',
        "export async function f() {\n  return (await import('../deploy/deploy-step.js')).deployFromPairs;\n}\n",
      ),
      [],
      'import() passes',
    );
    t.equal(
      (await layerErrors('src/daemon/probe.ts', "export { flushOutbox } from '../signals/outbox.js';\n")).length,
      1,
      'a re-export counts as an import',
    );
  },
);

t.test('imports within a folder, downwards and from the entry points pass', async (t) => {
  const cases: Array<[string, string]> = [
    ['src/deploy/probe.ts', 'pipeline/contract.js'],
    ['src/hooks/groups/probe.ts', 'apply/apply-templates.js'],
    ['src/hooks/groups/probe.ts', 'hooks/kit/run-tool.js'],
    ['src/hooks/groups/probe.ts', 'heat/deployment.js'],
    ['src/signals/transports/probe.ts', 'keystone/keystone-client.js'],
    ['src/status/probe.ts', 'signals/cfn-signal-queue/files.js'],
    ['src/cli/probe.ts', 'deploy/dispatch.js'],
    ['src/bin.ts', 'cli/main.js'],
    ['src/errors.ts', 'errors.js'],
  ];
  for (const [file, target] of cases)
    t.same(await layerErrors(file, valueImport(file, target)), [], `${file} -> ${target}`);
});

t.test('every pair of folders is judged as the graph says, from any depth', async (t) => {
  const layers = LAYERS;
  const typeOnly = TYPE_ONLY;
  const names = Object.keys(layers);
  const folderOf = (name: string, depth: number) =>
    name.endsWith('.ts') ? `src/${name}` : `src/${name}/${'sub/'.repeat(depth)}probe.ts`;
  const targetOf = (name: string) => (name.endsWith('.ts') ? name.replace(/\.ts$/, '.js') : `${name}/probe.js`);
  let checked = 0;
  for (const from of names) {
    const allowed = layers[from] ?? [];
    const file = folderOf(from, checked % 2);
    const source = names
      .map((to, i) => valueImport(file, targetOf(to)).replace(/\bx\b/g, `x${i}`).replace(/\by\b/g, `y${i}`))
      .join('');
    const errors = await layerErrors(file, source);
    const expected = names.filter((to) => to !== from && !allowed.includes('*') && !allowed.includes(to));
    t.equal(errors.length, expected.length, `${from}: refused ${expected.join(', ') || 'nothing'}`);
    for (const to of expected) {
      t.ok(
        errors.some(
          (e) =>
            e.startsWith(`${from} may import ${to} only as types`) || e.startsWith(`${from} may not import ${to} `),
        ),
        `${from} -> ${to} refused`,
      );
      if ((typeOnly[from] ?? []).includes(to))
        t.ok(
          errors.some((e) => e.startsWith(`${from} may import ${to} only as types`)),
          `${from} -> ${to}: types only`,
        );
    }
    checked++;
  }
  t.equal(checked, names.length);
});
