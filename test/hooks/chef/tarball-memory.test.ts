import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { startTestServer } from '../../helpers/http-test-server.js';
import { DEPLOY_INPUTS, FAKE_TOOLS, hookDirs, runHook, SYSTEM_PATH } from '../hook-process.js';

// The chef hook's tarball source is written to the disk as it arrives and hashed as a stream (tarball-source.ts):
// the built hook, run as the agent would start it with a recording fake of chef-client (Debian does not package
// chef), downloads a 192 MiB cookbook tarball without holding it. Built-in hooks run inside the daemon, which its unit
// shields from the OOM killer.

const MIB = 1024 * 1024;
const TAR_MIB = 192;

t.test('a 192 MiB tarball source is downloaded, hashed and unpacked without being held in memory', async (t) => {
  // The test's directory (t.testdir() again would empty it).
  const dirs = hookDirs(t, 'chef');
  const { dir } = dirs;
  // A cookbook with one large file (sparse here; tar reads it as zeros, so 192 MiB go over the wire).
  const cookbook = path.join(dir, 'src/big');
  mkdirSync(path.join(cookbook, 'files'), { recursive: true });
  writeFileSync(path.join(cookbook, 'metadata.rb'), "name 'big'\n");
  execFileSync('truncate', ['-s', `${TAR_MIB}M`, path.join(cookbook, 'files/blob')]);
  const server = await startTestServer((req, res) => {
    if (req.url !== '/big.tar') return void res.writeHead(404).end();
    res.writeHead(200);
    spawn('tar', ['-c', '-f', '-', '-C', path.dirname(cookbook), 'big'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    }).stdout.pipe(res);
  });
  t.teardown(() => server.close());

  const peakFile = path.join(dir, 'peak-rss-kb');
  const preload = path.join(dir, 'peak.cjs');
  writeFileSync(
    preload,
    `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(peakFile)}, String(process.resourceUsage().maxRSS)));\n`,
  );
  const res = await runHook(
    'chef',
    {
      id: 'chef-big-1',
      name: 'cfg',
      group: 'chef',
      options: { kitchen_sources: [{ tarball: `${server.url}/big.tar` }] },
      inputs: DEPLOY_INPUTS,
      outputs: [],
      config: '["recipe[big]"]',
    },
    {
      env: {
        PATH: `${FAKE_TOOLS}:${SYSTEM_PATH}`,
        HOME: dirs.home,
        HEAT_CHEF_WORKING: dirs.working,
        HEAT_CHEF_OUTPUTS: dirs.outputs,
        FAKE_TOOL_RECORD: path.join(dir, 'record.jsonl'),
        NODE_OPTIONS: `--require ${preload}`,
      },
      timeoutMs: 120_000,
    },
  );
  t.equal(res.result.deploy_status_code, 0, 'the fake chef-client ran', { result: res.result, stderr: res.stderr });
  t.equal(server.requests.length, 1);
  const unpacked = execFileSync('find', [dirs.working, '-name', 'blob', '-size', `${TAR_MIB * 1024}k`], {
    encoding: 'utf8',
  });
  t.ok(
    unpacked.trim() !== '' && statSync(unpacked.trim().split('\n')[0] ?? '').size === TAR_MIB * MIB,
    'unpacked whole',
  );
  const peakMib = Number(readFileSync(peakFile, 'utf8')) / 1024;
  // Downloaded into memory (the hook before download-to-file.ts), the same run took it to 476 MiB; streamed, its start
  // needs ~60 MiB, and buffers wait for the garbage collector.
  t.ok(peakMib < 160, `the hook's peak resident memory (${peakMib.toFixed(0)} MiB) stays below ${TAR_MIB} MiB`);
});
