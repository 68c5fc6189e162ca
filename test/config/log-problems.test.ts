import { writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { loadConfig } from '../../src/config/load.js';
import { logProblems } from '../../src/config/log-problems.js';
import { captureLog } from '../helpers/log-capture.js';

t.test(
  'each configuration problem is one line: errors at error, the rest at warn, file shown without the root',
  async (t) => {
    const root = t.testdir({ etc: {} });
    writeFileSync(
      path.join(root, 'etc/os-collect-config.conf'),
      '[DEFAULT]\npolling_interval = often\nno_such_option = 1\n',
    );
    const loaded = await loadConfig({ root });
    t.ok(loaded.problems.length >= 2, 'the file has problems');
    const { log, lines } = captureLog();
    logProblems(loaded, log);
    t.equal(lines.length, loaded.problems.length, 'one line per problem');
    for (const [i, p] of loaded.problems.entries()) {
      t.match(lines[i], {
        level: p.severity === 'error' ? 'error' : 'warn',
        msg: 'configuration problem',
        file: '/etc/os-collect-config.conf',
        problem: p.message,
      });
    }
    t.ok(lines.some((l) => l.option === 'polling_interval'));
  },
);

t.test('no problems, no lines', async (t) => {
  const root = t.testdir({ etc: { 'os-collect-config.conf': '[DEFAULT]\npolling_interval = 5\n' } });
  const { log, lines } = captureLog();
  logProblems(await loadConfig({ root }), log);
  t.same(lines, []);
});

t.test('each line carries its error code: a file that cannot be read, or a bad value', async (t) => {
  const root = t.testdir({ etc: { 'os-collect-config.conf': '[DEFAULT]\npolling_interval = often\n' } });
  const loaded = await loadConfig({ root, configFiles: ['/etc/os-collect-config.conf', '/etc/missing.conf'] });
  const { log, lines } = captureLog();
  logProblems(loaded, log);
  t.match(lines, [
    { file: '/etc/missing.conf', code: 'ERR_CONFIG_UNREADABLE' },
    { option: 'polling_interval', code: 'ERR_CONFIG_INVALID' },
  ]);
});
