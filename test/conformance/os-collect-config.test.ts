import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { requireBundle } from '../helpers/bundle.js';

// Conformance with Debian's python3-os-collect-config 12.0.0 (installed by .ci/run): the same local and heat_local
// sources, the same sequence of runs, and the cache directories must hold the same files with the same bytes and
// modes, and the command must see the same OS_CONFIG_FILES order.

const UPSTREAM = '/usr/bin/os-collect-config';

interface Side {
  name: 'upstream' | 'ours';
  dir: string;
  cache: string;
  backup: string;
  record: string;
  exitFile: string;
  hook: string;
  conf: string;
}

function makeSide(base: string, name: Side['name']): Side {
  const dir = path.join(base, name);
  mkdirSync(dir, { recursive: true });
  const side: Side = {
    name,
    dir,
    cache: path.join(dir, 'cache'),
    backup: path.join(dir, 'backup'),
    record: path.join(dir, 'runs.txt'),
    exitFile: path.join(dir, 'exit'),
    hook: path.join(dir, 'hook.sh'),
    conf: path.join(dir, 'occ.conf'),
  };
  writeFileSync(side.exitFile, '0');
  // The recorded paths are made relative to the side's cache so both sides compare.
  writeFileSync(
    side.hook,
    `#!/bin/sh\necho "$OS_CONFIG_FILES" | sed "s#${side.cache}/##g" >> '${side.record}'\nexit "$(cat '${side.exitFile}')"\n`,
    { mode: 0o755 },
  );
  writeFileSync(side.conf, '[DEFAULT]\n');
  return side;
}

function run(
  side: Side,
  sources: { local: string; heatLocal: string },
  extra: string[] = [],
): { status: number | null; stderr: string } {
  const common = [
    '--config-file',
    side.conf,
    '--cachedir',
    side.cache,
    '--backup-cachedir',
    side.backup,
    '--local-path',
    sources.local,
    '--heat_local-path',
    sources.heatLocal,
    '--command',
    side.hook,
    '--one-time',
    ...extra,
    'heat_local',
    'local',
  ];
  const res =
    side.name === 'upstream'
      ? spawnSync(UPSTREAM, common, { encoding: 'utf8', timeout: 60_000 })
      : spawnSync(process.execPath, [requireBundle(), 'collect', ...common], { encoding: 'utf8', timeout: 60_000 });
  return { status: res.status, stderr: res.stderr };
}

function snapshot(dir: string): Record<string, { mode: string; content: string }> {
  const out: Record<string, { mode: string; content: string }> = {};
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir).sort()) {
    const file = path.join(dir, name);
    const st = statSync(file);
    if (!st.isFile()) continue;
    out[name] = { mode: (st.mode & 0o777).toString(8), content: readFileSync(file, 'utf8') };
  }
  return out;
}

function normalisePaths(snap: Record<string, { mode: string; content: string }>, side: Side) {
  const out: typeof snap = {};
  for (const [k, v] of Object.entries(snap)) out[k] = { ...v, content: v.content.split(side.cache).join('<cache>') };
  return out;
}

t.test('Debian os-collect-config is installed (CI installs it)', async (t) => {
  t.ok(existsSync(UPSTREAM), `${UPSTREAM} must exist: apt-get install python3-os-collect-config`);
});

t.test(
  'same sources, same runs: identical cache files, modes and OS_CONFIG_FILES',
  { skip: !existsSync(UPSTREAM) && 'upstream missing (reported above)' },
  async (t) => {
    const base = t.testdir();
    const local = path.join(base, 'local-data');
    mkdirSync(local, { mode: 0o700 });
    chmodSync(local, 0o700);
    const heatLocal = path.join(base, 'cfn-init-data');
    const write = (name: string, value: unknown) => {
      const file = path.join(local, name);
      writeFileSync(file, JSON.stringify(value));
      chmodSync(file, 0o600);
    };
    write('10-base.json', { a: 1, nested: { x: 'y' }, text: 'caf\u00e9 \u{1F600} <b>&' });
    write('20-more', {
      b: [1, 2, { c: null }],
      deployments: [{ name: 'dep1', group: 'os-apply-config', config: { k: 'v' } }],
    });
    write('Zeta', { upper: true });
    write('.hidden', { never: 1 });
    mkdirSync(path.join(local, 'subdir'));
    writeFileSync(
      heatLocal,
      JSON.stringify({ 'os-collect-config': { collectors: ['local'] }, deployments: [], empty: {}, list: [] }),
    );

    const sides = [makeSide(base, 'upstream'), makeSide(base, 'ours')];
    const steps: Array<{ what: string; before?: () => void; exit?: string; extra?: string[] }> = [
      { what: 'first run' },
      { what: 'unchanged: no run' },
      {
        what: 'same keys, new order',
        before: () => write('10-base.json', { nested: { x: 'y' }, a: 1, text: 'caf\u00e9 \u{1F600} <b>&' }),
      },
      { what: 'change with a failing command', before: () => write('10-base.json', { a: 2 }), exit: '3' },
      { what: 'same data, command now succeeds', exit: '0' },
      { what: '--force', extra: ['--force'] },
      { what: 'a new file', before: () => write('30-new.json', { n: 'new' }) },
    ];
    for (const step of steps) {
      step.before?.();
      const results = sides.map((side) => {
        if (step.exit !== undefined) writeFileSync(side.exitFile, step.exit);
        return run(side, { local, heatLocal }, step.extra);
      });
      t.equal(results[1]?.status, results[0]?.status, `${step.what}: same exit status (${results[0]?.status})`);
      const [up, ours] = sides.map((side) => normalisePaths(snapshot(side.cache), side));
      t.same(ours, up, `${step.what}: identical cache directory`);
      const [upRuns, ourRuns] = sides.map((side) => (existsSync(side.record) ? readFileSync(side.record, 'utf8') : ''));
      t.equal(ourRuns, upRuns, `${step.what}: same command runs and OS_CONFIG_FILES order`);
    }
    const [upBackup, ourBackup] = sides.map((side) => Object.keys(snapshot(side.backup)));
    t.same(ourBackup, upBackup, 'backup cache dir holds the same files');
    for (const side of sides) rmSync(side.dir, { recursive: true, force: true });
  },
);

t.test(
  '--print prints the same JSON; --print-cachedir prints the cache dir',
  { skip: !existsSync(UPSTREAM) && 'upstream missing (reported above)' },
  async (t) => {
    const base = t.testdir();
    const local = path.join(base, 'local-data');
    mkdirSync(local, { mode: 0o700 });
    chmodSync(local, 0o700);
    writeFileSync(path.join(local, 'b'), JSON.stringify({ z: 1, a: [true, null, 1.5, 'x\ny'] }), { mode: 0o600 });
    writeFileSync(path.join(local, 'a'), JSON.stringify({ k: '\u00fc' }), { mode: 0o600 });
    const args = ['--config-file', path.join(base, 'none.conf'), '--local-path', local, '--print', 'local'];
    writeFileSync(path.join(base, 'none.conf'), '');
    const up = spawnSync(UPSTREAM, args, { encoding: 'utf8' });
    const ours = spawnSync(process.execPath, [requireBundle(), 'collect', ...args], { encoding: 'utf8' });
    t.equal(ours.stdout, up.stdout);
    t.equal(ours.status, up.status);
    const cd = ['--config-file', path.join(base, 'none.conf'), '--cachedir', path.join(base, 'c'), '--print-cachedir'];
    t.equal(
      spawnSync(process.execPath, [requireBundle(), 'collect', ...cd], { encoding: 'utf8' }).stdout,
      spawnSync(UPSTREAM, cd, { encoding: 'utf8' }).stdout,
    );
  },
);
