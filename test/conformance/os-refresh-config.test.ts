import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { BUNDLE, requireBundle } from '../helpers/bundle.js';

// Conformance with Debian's python3-os-refresh-config 12.0.0 (+ dib-utils' dib-run-parts): the same phase-directory
// corpus is run by both, each script appending its phase/name and what it saw to a trace file; the traces (order of
// execution, environment seen) and the exit statuses must be equal.
//
// Deliberate differences (not compared here):
// | Upstream                                                     | Ours                                                     |
// |--------------------------------------------------------------|----------------------------------------------------------|
// | text log lines and dib-run-parts PROFILING table on stderr   | JSON log lines on stdout (one per script: phase, script, exit code, seconds) |
// | script stdout goes to stdout                                 | script stdout and stderr go to stderr                    |
// | env files' output to stdout                                  | to stderr                                                |
// | scripts see `_`/SHLVL set by the dib-run-parts bash          | scripts see the agent's environment (+ environment.d); under tap our node side also gets NODE_OPTIONS/_TAPJS_* |
// | lock file's parent dir missing: traceback, exit 1            | the directory is created                                 |
// | --timeout: descendants SIGKILLed once; error.d unbounded     | script's process group SIGKILLed; error.d gets a fresh --timeout |
// | --timeout -5: traceback after locking (exit 1)               | usage error, exit 2                                      |
// | OS_REFRESH_CONFIG_BASE_DIR="" = phase dirs relative to cwd   | empty means unset                                        |
// | LC_ALL in the caller changes sort's tie-break                | tie-break is always byte order                           |
// | environment.d sorted by sort -n of the whole path (a relative base starting with digits sorts numerically) | byte order of the name |
// | argparse accepts abbreviated flags (--time 5)                | full flag names only                                     |
// | SIGTERM: Python dies, scripts keep running                   | the running script's group gets SIGTERM, then SIGKILL    |

const UPSTREAM = '/usr/bin/os-refresh-config';
const haveUpstream =
  existsSync(UPSTREAM) && spawnSync('/usr/bin/python3', ['-c', 'import os_refresh_config, psutil']).status === 0;
// The bundle under the compatibility name (a name ending in .mjs: tap's process tracking loads extensionless
// launchers through its CommonJS hooks).
function launcher(dir: string): string {
  const link = path.join(dir, 'os-refresh-config.mjs');
  if (!existsSync(link)) symlinkSync(BUNDLE, link);
  return link;
}

type Side = 'upstream' | 'ours';

interface Corpus {
  name: string;
  /** Build the tree under `base`; every script records into `trace`. */
  build(base: string, trace: string): void;
  env?: Record<string, string>;
  args?: string[];
  /** Run with the lock held by another process. */
  lockHeld?: boolean;
  /** Skip creating `base` itself. */
  noBase?: boolean;
}

function script(
  file: string,
  trace: string,
  opts: { exit?: number; show?: string[]; extra?: string; mode?: number } = {},
): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const shows = (opts.show ?? []).map((v) => ` ${v}=\${${v}-unset}`).join('');
  writeFileSync(
    file,
    `#!/bin/bash\necho "$(basename "$(dirname "$0")")/$(basename "$0")${shows}" >> '${trace}'\n${opts.extra ?? ''}\nexit ${opts.exit ?? 0}\n`,
    { mode: opts.mode ?? 0o755 },
  );
}

function envFile(base: string, name: string, body: string): void {
  mkdirSync(path.join(base, 'environment.d'), { recursive: true });
  writeFileSync(path.join(base, 'environment.d', name), body);
}

const TRICKY = ['zzz', '2-b', '09_c', '010-lead', '10-A', '10-a', '-5x', '-0a', '_x', '0', '00', '1e', '100', '99'];

const CORPORA: Corpus[] = [
  { name: 'empty base directory', build: () => undefined },
  { name: 'missing base directory', build: () => undefined, noBase: true },
  {
    name: 'all four phases plus error.d unused',
    build: (b, tr) => {
      for (const p of ['migration', 'post-configure', 'configure', 'pre-configure'])
        script(path.join(b, `${p}.d`, '10-x'), tr);
      script(path.join(b, 'error.d', '10-e'), tr);
    },
  },
  { name: 'tricky ordering', build: (b, tr) => TRICKY.forEach((n) => script(path.join(b, 'configure.d', n), tr)) },
  {
    name: 'skipped names, non-executables, directories and links',
    build: (b, tr) => {
      const d = path.join(b, 'configure.d');
      for (const n of ['10-ok', 'foo.sh', 'foo.bak', 'foo~', 'a.b', '20-ok']) script(path.join(d, n), tr);
      script(path.join(d, '15-noexec'), tr, { mode: 0o644 });
      mkdirSync(path.join(d, '30-dir'));
      script(path.join(b, 'elsewhere', 'target'), tr);
      symlinkSync(path.join(b, 'elsewhere', 'target'), path.join(d, '40-link'));
      symlinkSync(path.join(d, 'missing'), path.join(d, '50-dangling'));
    },
  },
  {
    name: 'environment.d: order, overrides, exports only, every phase',
    build: (b, tr) => {
      envFile(b, '9-a', 'export ORC_A=nine\nexport ORC_ORDER="${ORC_ORDER-}9"\n');
      envFile(b, '10-b', 'export ORC_A=ten\nexport ORC_ORDER="${ORC_ORDER-}10"\nORC_PLAIN=set\n');
      envFile(b, 'c.sh', 'export ORC_DOTTED=yes\n');
      envFile(b, 'skip~', 'export ORC_SKIPPED=yes\n');
      for (const p of ['pre-configure', 'configure', 'post-configure'])
        script(path.join(b, `${p}.d`, '10-x'), tr, {
          show: ['ORC_A', 'ORC_ORDER', 'ORC_PLAIN', 'ORC_DOTTED', 'ORC_SKIPPED', 'ORC_CALLER'],
        });
    },
    env: { ORC_CALLER: 'from-caller' },
  },
  {
    name: 'failure runs error.d and skips the rest',
    build: (b, tr) => {
      envFile(b, '10-e', 'export ORC_E=in-error\n');
      script(path.join(b, 'pre-configure.d', '10-p'), tr);
      script(path.join(b, 'configure.d', '10-ok'), tr);
      script(path.join(b, 'configure.d', '20-fail'), tr, { exit: 3 });
      script(path.join(b, 'configure.d', '30-never'), tr);
      script(path.join(b, 'post-configure.d', '10-never'), tr);
      script(path.join(b, 'error.d', '10-handler'), tr, { show: ['ORC_E'] });
      script(path.join(b, 'error.d', '20-handler-fails'), tr, { exit: 4 });
      script(path.join(b, 'error.d', '30-after-failing-handler'), tr);
    },
  },
  {
    name: 'exit status flattened to 1 without error.d',
    build: (b, tr) => script(path.join(b, 'post-configure.d', '10-fail'), tr, { exit: 42 }),
  },
  {
    name: 'failing environment.d file',
    build: (b, tr) => {
      envFile(b, '10-bad', 'echo "$ORC_UNSET_VARIABLE" >/dev/null\n');
      script(path.join(b, 'configure.d', '10-never'), tr);
      script(path.join(b, 'error.d', '10-handler'), tr);
    },
  },
  {
    name: 'RUN_PARTS_REGEX',
    build: (b, tr) => ['10-a.sh', '20-b', '30-c.sh', 'x.sh'].forEach((n) => script(path.join(b, 'configure.d', n), tr)),
    env: { RUN_PARTS_REGEX: '\\.sh$' },
  },
  {
    name: 'environment seen by scripts (filtered of shell bookkeeping)',
    build: (b, tr) => {
      envFile(b, '10-x', 'export ORC_FROM_ENV_D=1\n');
      script(path.join(b, 'configure.d', '10-dump'), tr, {
        extra: `env | grep -v -E '^(_|SHLVL|OLDPWD|NODE_OPTIONS|_TAPJS_[A-Z_]*)=' | LC_ALL=C sort >> '${tr}'`,
      });
    },
    env: { ORC_CALLER: 'x' },
  },
  { name: 'migration always runs', build: (b, tr) => script(path.join(b, 'migration.d', '10-m'), tr) },
  {
    name: 'lock held elsewhere exits 11',
    build: (b, tr) => script(path.join(b, 'configure.d', '10-never'), tr),
    lockHeld: true,
  },
  {
    name: '--timeout kills the script, error.d runs, exit 1',
    build: (b, tr) => {
      script(path.join(b, 'configure.d', '10-hang'), tr, { extra: 'sleep 60 &\nsleep 60' });
      script(path.join(b, 'configure.d', '20-never'), tr);
      script(path.join(b, 'error.d', '10-handler'), tr);
    },
    args: ['--timeout', '1'],
  },
  { name: '--print-phases', build: () => undefined, args: ['--print-phases'] },
  { name: 'bad --log-level is a usage error', build: () => undefined, args: ['--log-level', 'verbose'] },
  { name: 'positional argument is a usage error', build: () => undefined, args: ['extra'] },
];

async function runSide(
  side: Side,
  corpus: Corpus,
  dir: string,
): Promise<{ status: number | null; trace: string[]; stdout: string }> {
  const sideDir = path.join(dir, side);
  const base = path.join(sideDir, 'base');
  const trace = path.join(sideDir, 'trace');
  mkdirSync(sideDir, { recursive: true });
  if (!corpus.noBase) mkdirSync(base);
  corpus.build(base, trace);
  const lockfile = path.join(sideDir, 'orc.lock');
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: sideDir,
    LANG: 'C.UTF-8',
    OS_REFRESH_CONFIG_BASE_DIR: base,
    ...corpus.env,
  };
  let holder: ReturnType<typeof spawn> | undefined;
  if (corpus.lockHeld) {
    writeFileSync(lockfile, '');
    holder = spawn('flock', ['--nonblock', '--close', lockfile, 'sh', '-c', 'echo held; exec sleep 30'], {
      stdio: ['ignore', 'pipe', 'ignore'],
      detached: true,
    });
    await new Promise<void>((resolve) => holder!.stdout!.once('data', () => resolve()));
  }
  const args = ['--lockfile', lockfile, ...(corpus.args ?? [])];
  const [cmd, argv] = side === 'upstream' ? [UPSTREAM, args] : [process.execPath, [launcher(dir), ...args]];
  const child = spawn(cmd, argv, { env, cwd: sideDir, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  let stdout = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  const status = await new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  if (holder) process.kill(-holder.pid!, 'SIGKILL');
  const text = existsSync(trace) ? readFileSync(trace, 'utf8') : '';
  // Paths differ only by the side's directory.
  const lines = text
    .split(sideDir)
    .join('<dir>')
    .split('\n')
    .filter((l) => l !== '');
  if (process.env.ORC_CONFORMANCE_DEBUG) console.error(side, corpus.name, status, stderr);
  return { status, trace: lines, stdout };
}

t.test(
  'conformance with Debian os-refresh-config',
  { skip: haveUpstream ? false : 'python3-os-refresh-config is not installed' },
  async (t) => {
    requireBundle();
    t.ok(CORPORA.length >= 10);
    for (const corpus of CORPORA) {
      await t.test(corpus.name, async (t) => {
        const dir = t.testdir({});
        const [up, ours] = await Promise.all([runSide('upstream', corpus, dir), runSide('ours', corpus, dir)]);
        t.equal(ours.status, up.status, `exit status (upstream ${up.status})`);
        t.same(ours.trace, up.trace, 'scripts run and what they saw');
        if (corpus.args?.includes('--print-phases')) t.equal(ours.stdout, up.stdout);
      });
    }
  },
);
