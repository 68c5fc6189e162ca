import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { REPO } from '../helpers/bundle.js';
import { startDaemon, stopDaemon, until } from '../helpers/fault-daemon.js';

// What the idle daemon keeps resident is mostly the code of Node's builtin modules it has loaded, and on Node.js 22
// and 24 node:tls (with node:https and node:http) is 2 MB of it (docs/performance.md). A daemon whose sources make no
// HTTP request must not load them: they come with the HTTP client, not with the modules every daemon loads (the
// collectors' URL checks split IPv6 zones with src/http/zoned-url.ts; the agents that use them are in
// zoned-agents.ts). The built bundle, started as the unit starts it, through one whole cycle and its idle polls.

const HTTP_BUILTINS = ['NativeModule http', 'NativeModule https', 'NativeModule tls', 'NativeModule _tls_wrap'];

t.test('a daemon polling only local sources loads none of node:http, node:https, node:tls', async (t) => {
  const root = t.testdir({
    etc: {
      'os-collect-config.conf':
        '[DEFAULT]\ncommand = true\ncollectors = local\nmin_polling_interval = 1\npolling_interval = 1\n[agent]\nnative_pipeline = false\nlog_level = debug\n',
    },
  });
  const local = path.join(root, 'var/lib/os-collect-config/local-data');
  mkdirSync(local, { recursive: true, mode: 0o700 });
  writeFileSync(path.join(local, '10-source.json'), JSON.stringify({ source: { items: [1, 2, 3] } }), { mode: 0o600 });
  const report = path.join(root, 'builtins.json');
  const daemon = startDaemon(root, {
    nodeArgs: [
      '--lite-mode',
      '--v8-pool-size=0',
      `--import=${path.join(REPO, 'test/helpers/builtins-report-preload.mjs')}`,
    ],
    env: { OCA_BUILTINS_REPORT: report },
  });
  t.teardown(() => stopDaemon(daemon));
  // The first cycle (changed metadata, the command run, the cache committed), then a second poll that finds nothing new.
  await until('the first cycle', () => daemon.lines.some((l) => l.msg === 'cycle complete; cache committed'), 60_000);
  await until('an idle poll', () => daemon.lines.some((l) => l.msg === 'no changes detected'), 30_000);
  const exit = await stopDaemon(daemon);
  t.equal(exit.code, 0, 'the daemon stopped cleanly', { output: daemon.raw.join('\n') });
  t.ok(existsSync(report), 'the report was written at exit');
  const loaded = JSON.parse(readFileSync(report, 'utf8')) as string[];
  t.ok(
    loaded.includes('NativeModule child_process'),
    'the report lists what the daemon did load (it runs the command)',
  );
  t.same(
    loaded.filter((m) => HTTP_BUILTINS.includes(m)),
    [],
    'no HTTP or TLS builtins',
  );
});

// cfn-hup's code (src/cfntools/) is in chunks of its own, loaded only once /etc/cfn/cfn-hup.conf exists: a copy of the
// bundle without those chunks runs its cycles and idle polls; it fails to load them only when the file appears.
const CFN_HUP_MARKERS = [
  'cfn-hup configuration usable again',
  'hook action timed out and was killed',
  'no hook files: write',
];

t.test("cfn-hup's code is loaded only when /etc/cfn/cfn-hup.conf exists", async (t) => {
  const root = t.testdir({
    etc: {
      'os-collect-config.conf':
        '[DEFAULT]\ncommand = true\ncollectors = local\nmin_polling_interval = 1\npolling_interval = 1\n[agent]\nnative_pipeline = false\nlog_level = debug\n',
    },
  });
  const bundle = path.join(root, 'bundle');
  cpSync(path.join(REPO, 'dist/chunks'), path.join(bundle, 'chunks'), { recursive: true });
  cpSync(path.join(REPO, 'dist/os-config-agent.mjs'), path.join(bundle, 'os-config-agent.mjs'));
  const removed = readdirSync(path.join(bundle, 'chunks')).filter((chunk) => {
    const text = readFileSync(path.join(bundle, 'chunks', chunk), 'utf8');
    return CFN_HUP_MARKERS.some((m) => text.includes(m));
  });
  t.ok(removed.length > 0, `the chunks holding cfn-hup's code were found (${removed.join(', ')})`);
  for (const chunk of removed) rmSync(path.join(bundle, 'chunks', chunk));
  const local = path.join(root, 'var/lib/os-collect-config/local-data');
  mkdirSync(local, { recursive: true, mode: 0o700 });
  writeFileSync(path.join(local, '10-source.json'), JSON.stringify({ source: 1 }), { mode: 0o600 });
  const daemon = startDaemon(root, { bundle: path.join(bundle, 'os-config-agent.mjs') });
  t.teardown(() => t.comment(daemon.raw.slice(-5).join('\n')));
  t.teardown(() => stopDaemon(daemon));
  await until('the first cycle', () => daemon.lines.some((l) => l.msg === 'cycle complete; cache committed'), 60_000);
  await until('an idle poll', () => daemon.lines.some((l) => l.msg === 'no changes detected'), 30_000);
  await until(
    'a second idle poll',
    () => daemon.lines.filter((l) => l.msg === 'no changes detected').length > 1,
    30_000,
  );
  t.notOk(
    daemon.lines.some((l) => l.msg === 'background work failed; retrying later'),
    'without cfn-hup.conf nothing asked for the missing chunks',
  );
  mkdirSync(path.join(root, 'etc/cfn'));
  writeFileSync(path.join(root, 'etc/cfn/cfn-hup.conf'), '[main]\nstack=s\ncredential-file=/etc/cfn/c\n');
  await until(
    'cfn-hup asked for its code',
    () => daemon.lines.some((l) => l.msg === 'background work failed; retrying later' && l.work === 'cfn-hup'),
    30_000,
  );
  t.ok(daemon.alive(), 'and the daemon runs on');
  t.equal((await stopDaemon(daemon)).code, 0);
});
