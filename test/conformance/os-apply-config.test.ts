import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { REPO, requireBundle } from '../helpers/bundle.js';

// Conformance with Debian's python3-os-apply-config 12.0.0: every case under test/fixtures/apply-corpus/ (a template
// tree, metadata files, extra flags) runs through /usr/bin/os-apply-config and through our os-apply-config launcher;
// the output trees (bytes, modes, owners), stdout and exit codes must match, except for the deliberate differences
// listed below. Logs (stderr) differ by design: ours are JSON lines.

const UPSTREAM = '/usr/bin/os-apply-config';
// As root, upstream appends to /var/log/os-apply-config.log; run it in a private mount namespace with a scratch
// /var/log so a test run never writes to the machine's logs.
const UPSTREAM_PREFIX =
  process.getuid?.() === 0 && spawnSync('unshare', ['-m', 'true']).status === 0
    ? ['unshare', '-m', 'sh', '-c', 'mount -t tmpfs none /var/log && exec "$@"', 'os-apply-config']
    : [];
const CORPUS = path.join(REPO, 'test/fixtures/apply-corpus');
const OURS = path.join(REPO, 'dist/bin/os-apply-config');

interface CaseSpec {
  description: string;
  args: string[];
  metadata: string[];
  executable?: string[];
  existing?: Record<string, { mode: string; content: string }>;
  difference?: string;
}

interface Outcome {
  status: number | null;
  stdout: string;
  stderr: string;
  tree: Record<string, unknown>;
}

// Deliberate differences from upstream. `case` names the corpus case that demonstrates it (if any); `upstream` and
// `ours` are what each side must do there.
const DIFFERENCES: Record<
  string,
  { why: string; case?: string; upstream?: Partial<Outcome>; ours?: Partial<Outcome> }
> = {
  'unclosed-section': {
    why: 'pystache silently closes a section left open at the end of the file; we refuse the template (nothing written)',
    case: 'unclosed-section',
    upstream: { status: 0 },
    ours: { status: 1, tree: {} },
  },
  'unclosed-tag': {
    why: 'pystache copies "{{a" through as text; we refuse the template (nothing written)',
    case: 'unclosed-tag',
    upstream: { status: 0 },
    ours: { status: 1, tree: {} },
  },
  'repeated-m': {
    why: 'argparse keeps only the last -m although the help says to repeat it; we merge every -m file',
    case: 'repeated-metadata-flag',
    upstream: { status: 0 },
    ours: { status: 0 },
  },
  'empty-tag': { why: '"{{}}" is copied as text upstream; an error here' },
  'unknown-oac-key': {
    why: 'upstream accepts attribute names (body, set) as .oac keys and crashes or misbehaves; only mode/owner/group/allow_empty are accepted here',
  },
  'unreadable-template-dir': {
    why: 'upstream skips unreadable directories and reports success; an error here (test/apply/template-tree.test.ts)',
  },
  'symlink-escape': {
    why: 'upstream writes through symlinked output directories wherever they lead; refused here when they leave the output root (test/apply/write-rendered.test.ts)',
  },
  'fsync-unchanged': {
    why: 'writes are fsynced, and a file whose bytes and attributes already match is not rewritten',
  },
  'missing-key-warning': { why: 'each missing key is logged (warning); [apply] strict makes it fatal' },
  'python-attributes': {
    why: 'pystache resolves Python attributes on non-dict values ({{#s}}{{upper}}{{/s}}); only JSON object members resolve here',
  },
  'float-zero-fraction': {
    why: 'JSON numbers such as 1.0 or 1e20 render as 1 and 100000000000000000000 (JavaScript numbers do not keep the float type)',
  },
  'executable-timeout': { why: 'executable templates are killed after 10 minutes (upstream waits forever)' },
  'version-and-logs': {
    why: '--version prints the agent version; logs are JSON lines on stderr; /var/log/os-apply-config.log only with [apply] legacy_log_file',
  },
  'unknown-type-message': {
    why: 'an unknown --type is a clean error (exit 1) instead of a Python traceback (also exit 1)',
  },
};

function snapshot(dir: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (!existsSync(dir)) return out;
  const walk = (rel: string) => {
    for (const name of readdirSync(path.join(dir, rel)).sort()) {
      const relPath = rel === '' ? name : `${rel}/${name}`;
      const abs = path.join(dir, relPath);
      const st = lstatSync(abs);
      const mode = (st.mode & 0o7777).toString(8);
      if (st.isSymbolicLink()) out[relPath] = { type: 'symlink', target: readlinkSync(abs) };
      else if (st.isDirectory()) {
        out[relPath] = { type: 'dir', mode };
        walk(relPath);
      } else
        out[relPath] = { type: 'file', mode, uid: st.uid, gid: st.gid, content: readFileSync(abs).toString('base64') };
    }
  };
  walk('');
  return out;
}

async function runSide(side: 'upstream' | 'ours', caseDir: string, spec: CaseSpec, work: string): Promise<Outcome> {
  const root = path.join(work, side);
  const copy = path.join(root, 'case');
  mkdirSync(root, { recursive: true });
  cpSync(caseDir, copy, { recursive: true });
  for (const rel of spec.executable ?? []) chmodSync(path.join(copy, 'templates', rel), 0o755);
  const out = path.join(root, 'out');
  mkdirSync(out);
  for (const [rel, file] of Object.entries(spec.existing ?? {})) {
    mkdirSync(path.dirname(path.join(out, rel)), { recursive: true });
    writeFileSync(path.join(out, rel), file.content);
    chmodSync(path.join(out, rel), parseInt(file.mode, 8));
  }
  const metas = spec.metadata.map((m) => path.join(copy, 'metadata', m));
  const repeat = spec.args.includes('__REPEAT_M__');
  const mArgs = repeat ? metas.flatMap((m) => ['-m', m]) : ['-m', ...metas];
  const args = [
    '-t',
    path.join(copy, 'templates'),
    '-o',
    out,
    ...mArgs,
    '--fallback-metadata',
    '--os-config-files',
    path.join(root, 'none.json'),
    ...spec.args.filter((a) => a !== '__REPEAT_M__'),
  ];
  const env = { ...process.env };
  delete env.OS_CONFIG_FILES;
  delete env.OS_CONFIG_FILES_PATH;
  delete env.OS_CONFIG_APPLIER_TEMPLATES;
  const argv =
    side === 'upstream'
      ? [...UPSTREAM_PREFIX, UPSTREAM, ...args]
      : // tap re-adds its loader hooks (NODE_OPTIONS) to every child; they cannot load the extensionless ESM launcher.
        ['/usr/bin/env', '-u', 'NODE_OPTIONS', process.execPath, OURS, '--root', root, ...args];
  const res = await run(argv, { env, cwd: root });
  return { status: res.status, stdout: res.stdout, stderr: res.stderr, tree: snapshot(out) };
}

const cases = readdirSync(CORPUS).sort();

t.test('the corpus is big enough and every difference is demonstrated or documented', async (t) => {
  t.ok(cases.length >= 15, `${cases.length} cases`);
  for (const name of cases) {
    const spec = JSON.parse(readFileSync(path.join(CORPUS, name, 'case.json'), 'utf8')) as CaseSpec;
    if (spec.difference) t.equal(DIFFERENCES[spec.difference]?.case, name, `${name}: its difference is in the table`);
  }
  for (const d of Object.values(DIFFERENCES)) t.ok(d.why.length > 20);
});

t.test(
  'conformance with Debian os-apply-config',
  { skip: existsSync(UPSTREAM) ? false : `${UPSTREAM} is not installed` },
  async (t) => {
    requireBundle();
    for (const name of cases) {
      t.test(name, async (t) => {
        const caseDir = path.join(CORPUS, name);
        const spec = JSON.parse(readFileSync(path.join(caseDir, 'case.json'), 'utf8')) as CaseSpec;
        const work = t.testdir();
        // Both sides at once: each has its own directories.
        const [upstream, ours] = await Promise.all([
          runSide('upstream', caseDir, spec, work),
          runSide('ours', caseDir, spec, work),
        ]);
        const difference = spec.difference ? DIFFERENCES[spec.difference] : undefined;
        if (!difference) {
          t.equal(ours.status, upstream.status, `exit status (${spec.description})`, {
            upstreamStderr: upstream.stderr.slice(0, 800),
            oursStderr: ours.stderr.slice(0, 800),
          });
          t.equal(ours.stdout, upstream.stdout, 'stdout');
          t.same(ours.tree, upstream.tree, 'output tree: bytes, modes, owners');
          // A failing run must leave the output as it was (only pre-existing files).
          if (ours.status !== 0 && !spec.args.some((a) => a.includes('key')))
            t.same(
              Object.keys(ours.tree).filter((k) => !(k in (spec.existing ?? {})) && !isParentOfExisting(k, spec)),
              [],
              'nothing written on failure',
            );
          return;
        }
        for (const [side, outcome, expected] of [
          ['upstream', upstream, difference.upstream],
          ['ours', ours, difference.ours],
        ] as const) {
          if (expected?.status !== undefined) t.equal(outcome.status, expected.status, `${side} exit status`);
          if (expected?.tree !== undefined) t.same(outcome.tree, expected.tree, `${side} output tree`);
        }
        if (spec.difference === 'repeated-m') {
          const content = (tree: Record<string, unknown>) =>
            Buffer.from(((tree['etc/m'] ?? {}) as { content?: string }).content ?? '', 'base64').toString();
          t.equal(content(upstream.tree), '-B\n', 'upstream: only the last -m counts');
          t.equal(content(ours.tree), 'A-B\n', 'ours: every -m merges');
        }
      });
    }
  },
);

/** Run a command to completion (bounded by a timeout), collecting its output. */
function run(
  argv: string[],
  options: { env: NodeJS.ProcessEnv; cwd: string },
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0] as string, argv.slice(1), {
      ...options,
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 60_000,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

function isParentOfExisting(rel: string, spec: CaseSpec): boolean {
  return Object.keys(spec.existing ?? {}).some((e) => e.startsWith(`${rel}/`));
}
