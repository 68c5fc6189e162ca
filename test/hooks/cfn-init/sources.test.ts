import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import t from 'tap';
import { startTestServer, type TapTest } from '../../helpers/http-test-server.js';
import { HOOK_MODES, SYSTEM_PATH, modeOf, runHook } from '../hook-process.js';

// cfn-init's `sources` of a lone .gz or .bz2 file (src/hooks/cfn-init/sources.ts): one file, unpacked as a stream onto
// the disk. The archives of other kinds go to tar and unzip, whose own tests are in ../groups/cfn-init.test.ts. And a
// file's `source` (src/hooks/cfn-init/files.ts), downloaded beside the file rather than into memory.

const MIB = 1024 * 1024;
/** 256 MiB of zeros as 256 gzip members of 1 MiB each (a gzip file may hold several): ~260 KB on the wire. */
const BOMB_MIB = 256;
const bomb = Buffer.concat(Array.from({ length: BOMB_MIB }, () => gzipSync(Buffer.alloc(MIB))));
const served: Record<string, Buffer> = {
  '/notes.txt.gz': gzipSync('first line\nsecond line\n'),
  '/notes.txt.bz2': execFileSync('bzip2', ['-c'], { input: 'from bzip2\n' }),
  '/zeros.gz': bomb,
  // A gzip header, then bytes that are not deflate data.
  '/broken.gz': Buffer.concat([gzipSync('x').subarray(0, 10), Buffer.from('not deflate data at all')]),
};
/** A plain tar of one 192 MiB file of zeros, made as it is sent (tar reads a sparse file): 192 MiB on the wire. */
const TAR_MIB = 192;
const tarDir = t.testdir({});
execFileSync('truncate', ['-s', `${TAR_MIB}M`, path.join(tarDir, 'big')]);
/** A file's source: 192 MiB of zeros, sent a MiB at a time. */
const SOURCE_MIB = 192;
let motd = 'welcome\n';
const server = await startTestServer(async (req, res) => {
  if (req.url === '/big.bin') {
    res.writeHead(200, { 'content-length': SOURCE_MIB * MIB });
    const block = Buffer.alloc(MIB);
    for (let i = 0; i < SOURCE_MIB; i++) if (!res.write(block)) await once(res, 'drain');
    res.end();
    return;
  }
  if (req.url === '/motd') {
    res.end(motd);
    return;
  }
  if (req.url === '/big.tar') {
    res.writeHead(200);
    spawn('tar', ['-c', '-f', '-', '-C', tarDir, 'big'], { stdio: ['ignore', 'pipe', 'inherit'] }).stdout.pipe(res);
    return;
  }
  const body = served[req.url ?? ''];
  if (!body) {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, { 'content-length': body.length }).end(body);
});
t.teardown(() => server.close());

const deployment = (sources: Record<string, string>) => withConfig({ sources });
const withConfig = (config: object) => ({
  id: 'dep-gz-1',
  name: 'init',
  group: 'cfn-init',
  options: {},
  inputs: [],
  outputs: [],
  config: { config },
});

function setup(t: TapTest) {
  const dir = t.testdir();
  const root = path.join(dir, 'root');
  mkdirSync(root);
  const env: Record<string, string> = { PATH: SYSTEM_PATH, HOME: dir, OS_CONFIG_AGENT_ROOT: root };
  return { dir, env, at: (p: string) => path.join(root, p) };
}

for (const { name: mode, run } of HOOK_MODES)
  t.test(
    `${mode}: a lone .gz becomes one file; one that is not gzip fails, naming the source, and leaves nothing`,
    async (t) => {
      const { env, at } = setup(t);
      const ok = await run('cfn-init', deployment({ '/srv/notes': `${server.url}/notes.txt.gz` }), { env });
      t.equal(ok.result.deploy_status_code, 0, 'unpacked', { result: ok.result, stderr: ok.stderr });
      t.equal(readFileSync(at('/srv/notes/notes.txt'), 'utf8'), 'first line\nsecond line\n');
      t.equal(modeOf(at('/srv/notes/notes.txt')), '644');

      const bad = await run('cfn-init', deployment({ '/srv/broken': `${server.url}/broken.gz` }), { env });
      t.equal(bad.result.deploy_status_code, 1, 'the run fails');
      t.match(
        bad.result.deploy_stderr,
        /cfn-init: config "config" sources\.\/srv\/broken: .*(header|invalid|incorrect)/i,
      );
      t.same(readdirSync(at('/srv/broken')), [], 'no file and no temp file is left in the directory');
    },
  );

const SHM = '/dev/shm';
t.test(
  'a lone .bz2 becomes one file, with the temp directory on another filesystem than the target',
  { skip: !isDirectory(SHM) && `needs ${SHM}` },
  async (t) => {
    const { env, at } = setup(t);
    // bunzip2 writes its output beside the download, in the temp directory; moved by a rename, it failed with EXDEV
    // whenever /tmp was a tmpfs and the target on disk.
    t.not(statSync(SHM).dev, statSync(at('/')).dev, 'the temp directory and the target are on two filesystems');
    const res = await runHook('cfn-init', deployment({ '/srv/bz': `${server.url}/notes.txt.bz2` }), {
      env: { ...env, TMPDIR: SHM },
    });
    t.equal(res.result.deploy_status_code, 0, 'unpacked', { result: res.result, stderr: res.stderr });
    t.equal(readFileSync(at('/srv/bz/notes.txt'), 'utf8'), 'from bzip2\n');
    t.equal(modeOf(at('/srv/bz/notes.txt')), '644', 'as a lone .gz file');
    t.same(
      readdirSync(SHM).filter((f) => f.startsWith('cfn-init-source-')),
      [],
      'the temp directory is gone',
    );
  },
);

function isDirectory(p: string): boolean {
  return statSync(p, { throwIfNoEntry: false })?.isDirectory() === true;
}

/** The hook as the executable the agent would start, run on `config`; its peak resident memory in MiB. */
async function peakOfRun(t: TapTest, config: object) {
  const { dir, env, at } = setup(t);
  const peakFile = path.join(dir, 'peak-rss-kb');
  const preload = path.join(dir, 'peak.cjs');
  writeFileSync(
    preload,
    `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(peakFile)}, String(process.resourceUsage().maxRSS)));\n`,
  );
  const res = await runHook('cfn-init', withConfig(config), {
    env: { ...env, NODE_OPTIONS: `--require ${preload}` },
    timeoutMs: 120_000,
  });
  t.equal(res.result.deploy_status_code, 0, 'unpacked', { result: res.result, stderr: res.stderr });
  return { at, peakMib: Number(readFileSync(peakFile, 'utf8')) / 1024 };
}

t.test('an archive is written to disk as it arrives, not held in memory', async (t) => {
  const { at, peakMib } = await peakOfRun(t, { sources: { '/srv/big': `${server.url}/big.tar` } });
  t.equal(statSync(at('/srv/big/big')).size, TAR_MIB * MIB, `all ${TAR_MIB} MiB are unpacked`);
  // Held in memory, the download took the hook to ~480 MiB (the body, its chunks and the copy written out); streamed,
  // ~125 MiB: the hook's own start needs ~60 MiB, and buffers read and written wait for the garbage collector.
  t.ok(peakMib < 160, `the hook's peak resident memory (${peakMib.toFixed(0)} MiB) stays below ${TAR_MIB} MiB`);
});

t.test('a .gz that expands far beyond its size is written without being held in memory', async (t) => {
  const { at, peakMib } = await peakOfRun(t, { sources: { '/srv/data': `${server.url}/zeros.gz` } });
  t.equal(statSync(at('/srv/data/zeros')).size, BOMB_MIB * MIB, `all ${BOMB_MIB} MiB are on disk`);
  // Held in memory, the content alone would be 256 MiB; the hook's own start needs ~60 MiB.
  t.ok(
    peakMib < 160,
    `the hook's peak resident memory (${peakMib.toFixed(0)} MiB) stays far below the ${BOMB_MIB} MiB`,
  );
});

t.test("a file's source is downloaded beside the file, not held in memory", async (t) => {
  const { at, peakMib } = await peakOfRun(t, { files: { '/srv/big.bin': { source: `${server.url}/big.bin` } } });
  t.equal(statSync(at('/srv/big.bin')).size, SOURCE_MIB * MIB, `all ${SOURCE_MIB} MiB are in the file`);
  t.equal(modeOf(at('/srv/big.bin')), '644');
  t.same(readdirSync(at('/srv')), ['big.bin'], 'no temp file is left beside it');
  // Held in memory, the body, its chunks and the copy compared took the hook past 400 MiB.
  t.ok(peakMib < 160, `the hook's peak resident memory (${peakMib.toFixed(0)} MiB) stays below ${SOURCE_MIB} MiB`);
});

t.test('a file whose source has not changed is not rewritten; a changed source is', async (t) => {
  const { env, at } = setup(t);
  const config = { files: { '/etc/motd': { source: `${server.url}/motd`, mode: '000644' } } };
  const first = await runHook('cfn-init', withConfig(config), { env });
  t.equal(first.result.deploy_status_code, 0, 'written', { result: first.result, stderr: first.stderr });
  const inode = statSync(at('/etc/motd')).ino;
  const again = await runHook('cfn-init', withConfig(config), { env });
  t.equal(again.result.deploy_status_code, 0);
  t.match(again.stderr, /file unchanged/);
  t.equal(statSync(at('/etc/motd')).ino, inode, 'the same file: not replaced');
  t.same(readdirSync(at('/etc')), ['motd'], 'and the download compared with it is gone');
  motd = 'changed\n';
  t.teardown(() => {
    motd = 'welcome\n';
  });
  const changed = await runHook('cfn-init', withConfig(config), { env });
  t.equal(changed.result.deploy_status_code, 0);
  t.equal(readFileSync(at('/etc/motd'), 'utf8'), 'changed\n');
  t.not(statSync(at('/etc/motd')).ino, inode, 'replaced');
});
