import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { Agent } from '../../src/daemon/agent.js';
import type { HttpClient } from '../../src/http/types.js';
import { captureLog } from '../helpers/log-capture.js';
import { makeAgentRoot, recordingCommand } from '../helpers/agent-root.js';

// Hostile metadata from local sources: every case is rejected or contained, nothing is written outside the root,
// the daemon keeps going and the last good cache stays.

const noHttp: HttpClient = { request: () => Promise.reject(new Error('no HTTP here')) };

async function agentFor(dir: string) {
  const cmd = recordingCommand(dir);
  const root = makeAgentRoot(
    path.join(dir, 'root'),
    `[DEFAULT]\ncommand = ${cmd.command}\ncollectors = heat_local\ncollectors = local\n[agent]\nwatch = false\nmax_source_bytes = 1048576\n`,
  );
  const captured = captureLog();
  const agent = await Agent.create({
    sources: { root: root.root },
    log: captured.log,
    mode: 'collect',
    createHttp: () => noHttp,
    strictExit: true,
  });
  return { agent, root, captured, cache: path.join(root.root, 'var/lib/os-collect-config'), cmd };
}

function allFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) out.push(...allFiles(p));
    else out.push(p);
  }
  return out;
}

t.test('__proto__ and constructor keys are plain data: no prototype change, cached verbatim', async (t) => {
  const { agent, root, cache } = await agentFor(t.testdir());
  root.writeHeatLocal('{"__proto__": {"polluted": true}, "constructor": {"prototype": {"x": 1}}, "ok": 1}');
  root.writeLocal('__proto__', '{"__proto__": {"polluted": true}}');
  const report = await agent.cycle(new AbortController().signal);
  t.equal(report.exitCode, 0);
  t.equal(({} as Record<string, unknown>).polluted, undefined, 'Object.prototype untouched');
  const cached = readFileSync(path.join(cache, 'heat_local.json'), 'utf8');
  t.match(cached, /"__proto__": \{/);
  t.match(cached, /"constructor": \{/);
  t.ok(existsSync(path.join(cache, '__proto__.json')), 'a file named __proto__ is just a cache key');
});

t.test('files named os_config_files or like a collector are left out and reported; the rest is used', async (t) => {
  const { agent, root, cache, cmd } = await agentFor(t.testdir());
  root.writeHeatLocal({ deployments: [{ id: 'd1', name: 'x', group: 'script', config: 'true' }] });
  root.writeLocal('heat_local', { a: 1 });
  root.writeLocal('os_config_files', { b: 2 });
  root.writeLocal('good', { v: 1 });
  const report = await agent.cycle(new AbortController().signal);
  t.equal(report.exitCode, 1, 'a one-time run fails on it');
  t.match(report.failures, [{ collector: 'local', code: 'ERR_RESERVED_NAME', message: /"heat_local"/ }]);
  t.match(JSON.parse(readFileSync(path.join(cache, 'heat_local.json'), 'utf8')), { deployments: [{ id: 'd1' }] });
  t.same(JSON.parse(readFileSync(path.join(cache, 'good.json'), 'utf8')), { v: 1 }, 'the other file is used');
  const list = JSON.parse(readFileSync(path.join(cache, 'os_config_files.json'), 'utf8')) as string[];
  t.same(
    list.map((f) => path.basename(f)),
    ['heat_local.json', 'good.json'],
    "the file list is the cache's own",
  );
  t.equal(readFileSync(cmd.record, 'utf8').trim().split('\n').length, 1, 'the command ran on the rest');
});

t.test('deeply nested and oversized documents are refused with a clear reason; last good data kept', async (t) => {
  const { agent, root, cache, captured } = await agentFor(t.testdir());
  root.writeLocal('good', { v: 1 });
  await agent.cycle(new AbortController().signal);
  root.writeLocal('deep', '['.repeat(200_000) + ']'.repeat(200_000));
  const r1 = await agent.cycle(new AbortController().signal);
  t.equal(r1.exitCode, 1);
  t.match(
    r1.failures.find((f) => f.collector === 'local'),
    { code: 'ERR_SOURCE_INVALID_DATA', message: /deeper than 512/ },
  );
  writeFileSync(path.join(root.localDir, 'deep'), '', { mode: 0o600 });
  root.writeLocal('deep', 'x'.repeat(2 * 1024 * 1024));
  const r2 = await agent.cycle(new AbortController().signal);
  t.match(
    r2.failures.find((f) => f.collector === 'local'),
    { code: 'ERR_SOURCE_INVALID_DATA', message: /over the 1048576-byte limit/ },
  );
  t.ok(
    captured.lines.some((l) => String(l.reason ?? '').includes('limit')),
    'the size limit is named',
  );
  t.same(JSON.parse(readFileSync(path.join(cache, 'good.json'), 'utf8')), { v: 1 }, 'last good cache kept');
});

t.test('non-UTF-8 bytes and nesting up to the limit are accepted; deeper nesting is refused', async (t) => {
  const { agent, root, cache } = await agentFor(t.testdir());
  writeFileSync(
    path.join(root.localDir, 'latin1'),
    Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xe9, 0xff, 0x22, 0x7d]),
    { mode: 0o600 },
  );
  root.writeLocal('nested', '{"a":'.repeat(500) + '1' + '}'.repeat(500));
  const report = await agent.cycle(new AbortController().signal);
  t.equal(report.exitCode, 0, 'both documents are valid JSON once decoded');
  t.same(report.changedKeys, ['latin1', 'nested']);
  t.match(readFileSync(path.join(cache, 'latin1.json'), 'utf8'), /\\ufffd/, 'invalid bytes became U+FFFD, escaped');
  root.writeLocal('nested', '{"a":'.repeat(2000) + '1' + '}'.repeat(2000));
  const deeper = await agent.cycle(new AbortController().signal);
  t.equal(deeper.exitCode, 1);
  t.same(JSON.parse(readFileSync(path.join(cache, 'latin1.json'), 'utf8')), { a: '\ufffd\ufffd' }, 'other data kept');
});

t.test('names that could escape the cache are never used as paths', async (t) => {
  const { agent, root } = await agentFor(t.testdir());
  root.writeHeatLocal({
    deployments: [
      { name: '../../escaped', group: 'os-apply-config', config: { evil: true } },
      { name: '.hidden', group: 'Heat::Ungrouped', config: {} },
      { name: 'ok-name', group: 'os-apply-config', config: { fine: true } },
    ],
  });
  await agent.cycle(new AbortController().signal);
  for (const f of allFiles(path.dirname(root.root))) {
    t.ok(
      f.startsWith(root.root) || f.startsWith(path.join(path.dirname(root.root), '')),
      `stays inside the test dir: ${f}`,
    );
    t.notMatch(path.basename(f), /escaped/, 'no escaped file anywhere');
  }
});
