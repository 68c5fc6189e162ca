import t from 'tap';
import { textLine } from '../../src/log/text-line.js';

// The text form of a log line: time, level, message, then key=value in the order the code gave them.

t.test('message first after time and level, then the fields as key=value', async (t) => {
  const line = JSON.stringify({
    level: 'warn',
    time: '2026-02-01T10:02:03.456Z',
    name: 'os-config-agent',
    deploymentId: 'a1',
    failed: true,
    exitCode: 0,
    msg: 'deployment state changed',
  });
  t.equal(
    textLine(`${line}\n`),
    '10:02:03.456 warn  deployment state changed  deploymentId=a1 failed=true exitCode=0\n',
  );
});

t.test('values that would split a line are JSON strings; objects and lists are JSON', async (t) => {
  const line = JSON.stringify({
    level: 'info',
    time: '2026-02-01T10:02:03.456Z',
    reason: 'no hook for group "x"',
    eq: 'a=b',
    plain: '/etc/x.conf',
    list: ['a', 'b'],
    nothing: null,
    msg: 'm',
  });
  t.equal(
    textLine(line),
    `10:02:03.456 info  m  reason=${JSON.stringify('no hook for group "x"')} eq="a=b" plain=/etc/x.conf list=["a","b"] nothing=null\n`,
  );
});

t.test('no fields: no trailing separator; a line that is not JSON passes as it is', async (t) => {
  t.equal(
    textLine('{"level":"info","time":"2026-02-01T10:02:03.456Z","msg":"cycle complete"}\n'),
    '10:02:03.456 info  cycle complete\n',
  );
  t.equal(textLine('not json\n'), 'not json\n');
  t.equal(textLine('[1,2]\n'), '[1,2]\n');
});
