import t from 'tap';
import { priorityOf } from '../../src/log/journal.js';
import { BAD, runFailingCycle } from '../helpers/failing-cycle.js';

// journald's priorities, from the operator's side: the built daemon, its stdout made the stream $JOURNAL_STREAM
// names (as systemd does for a unit), leads every line with <N>, so `journalctl -p warning` finds a failed
// deployment; with $JOURNAL_STREAM naming another stream, or unset, the lines are plain JSON.

t.test(
  'stdout is the journal stream: every line has its syslog priority; a failed deployment is a warning',
  async (t) => {
    const r = await runFailingCycle(t.testdir(), {
      shellPrefix: 'JOURNAL_STREAM=$(stat -L -c %d:%i /proc/$$/fd/1); export JOURNAL_STREAM;',
    });
    t.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trimEnd().split('\n');
    t.ok(lines.length > 10, `${lines.length} lines`);
    for (const line of lines) t.match(line, /^<[2-7]>\{"level":"/, 'a priority, then the JSON line');
    const failure = lines.find(
      (l) => l.includes('"deployment state changed"') && l.includes(BAD) && l.includes('"failed":true'),
    );
    t.match(failure, /^<4>\{"level":"warn"/, 'the state change that records the failure: priority 4 (warning)');
    t.ok(
      lines.some((l) => l.startsWith('<6>') && l.includes('"agent starting"')),
      'an ordinary line: priority 6 (info)',
    );
  },
);

t.test('any other stdout: no prefix, whatever $JOURNAL_STREAM says', async (t) => {
  const r = await runFailingCycle(t.testdir(), { env: { JOURNAL_STREAM: '8:12345' } });
  t.equal(r.code, 0, r.stderr);
  for (const line of r.stdout.trimEnd().split('\n')) t.match(line, /^\{"level":"/);
});

t.test('priorityOf: pino levels as syslog priorities', async (t) => {
  const line = (level: string) => `{"level":"${level}","time":"x","msg":"m"}\n`;
  t.same(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace'].map((l) => priorityOf(line(l))),
    [2, 3, 4, 6, 7, 7],
  );
  t.equal(priorityOf('not json\n'), 6, 'anything else is info');
  t.equal(priorityOf('{"level":"loud"}\n'), 6);
});
