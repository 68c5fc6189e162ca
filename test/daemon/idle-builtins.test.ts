import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
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
