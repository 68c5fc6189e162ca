import t from 'tap';
import { formatReport as formatDoctor, fail, reportOf } from '../../src/doctor/check.js';
import { formatDetail } from '../../src/status/detail.js';
import { formatDeployments, formatReport } from '../../src/status/format.js';
import type { DeploymentStatus } from '../../src/status/status.js';
import { EXIT, verdictOf } from '../../src/status/verdict.js';
import { VERSION } from '../../src/version.js';
import { terminalLines, terminalText } from '../../src/util/terminal-text.js';

// Text from metadata shown on a terminal: no control character, no bidi override and no line break of its own
// reaches it; each is shown escaped.

// eslint-disable-next-line no-control-regex -- what must never reach the terminal
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
const HOSTILE = 'web\x1b]0;owned\x07\x1b[2J\r\nFAKE ROW\u202etxt.exe\x9b31m\x00';

t.test('every code unit of the BMP: the unsafe ones escaped, every other one shown as it is', async (t) => {
  let escapedCount = 0;
  for (let code = 0; code <= 0xffff; code++) {
    const ch = String.fromCharCode(code);
    const shown = terminalText(ch);
    if (UNSAFE.test(ch)) {
      escapedCount++;
      if (!/^\\(x[0-9a-f]{2}|u[0-9a-f]{4}|[nrt])$/.test(shown)) t.fail(`U+${code.toString(16)} shown as ${shown}`);
    } else if (shown !== ch) t.fail(`U+${code.toString(16)} changed to ${shown}`);
  }
  t.equal(escapedCount, 32 + 1 + 32 + 1 + 2 + 2 + 5 + 4);
  t.equal(terminalText(HOSTILE), 'web\\x1b]0;owned\\x07\\x1b[2J\\r\\nFAKE ROW\\u202etxt.exe\\x9b31m\\x00');
  t.equal(terminalText('déploiement ✓ 名前'), 'déploiement ✓ 名前', 'letters of any script are kept');
  t.equal(terminalLines('a\x1b[1m\nb\rc\n'), 'a\\x1b[1m\nb\\rc\n', 'terminalLines keeps the line breaks');
});

const hostile: DeploymentStatus = {
  id: 'id\x1b[31m\n2',
  name: HOSTILE,
  group: 'scr\ript',
  action: 'CREATE',
  state: 'done',
  failed: true,
  firstSeenAt: '2026-02-01T10:00:00.000Z',
  hookStarts: 1,
  exitCode: 1,
  signal: { state: 'sent', transport: 'NO_SIGNAL', attempts: 0 },
  lastError: 'boom\x1b]52;c;Y2xpcA==\x07',
};

type Test = Parameters<Parameters<typeof import('tap').test>[0]>[0];

function assertSafe(t: Test, text: string, lines: number): void {
  t.notMatch(text.replace(/\n/g, ''), UNSAFE, 'no control character left');
  t.equal(text.trimEnd().split('\n').length, lines, 'no row faked');
}

t.test('status: the deployments table, the sources and the verdict show hostile text escaped', async (t) => {
  assertSafe(t, formatDeployments([hostile]), 2);
  const report = {
    version: 1,
    agentVersion: VERSION,
    agent: { running: true },
    sources: [{ name: 'local', consecutiveFailures: 1, lastErrorCode: 'ERR_SOURCE_INVALID_DATA', lastError: HOSTILE }],
    deployments: [{ ...hostile, state: 'running' as const }],
    signals: [],
  } as const;
  const verdict = verdictOf(report);
  t.not(verdict.exitCode, EXIT.done, 'the verdict names the deployment');
  const text = formatReport(report, verdict);
  t.notMatch(text.replace(/\n/g, ''), UNSAFE);
  t.match(text, /web\\x1b\]0;owned/);
  t.notOk(
    text.split('\n').some((l) => l.startsWith('FAKE ROW')),
    'a newline in a name does not start a line',
  );
});

t.test('status <id>: every line of the detail escaped, output tails included', async (t) => {
  const text = formatDetail({
    version: 1,
    deployment: hostile,
    inputs: [{ name: 'in\x1bput', value: 'v\x1b[1m' }],
    options: {},
    outputs: { ['out\u202e']: 'x\ry' },
    stdoutTail: 'one\x1b[2J\ntwo\r\n',
    stderrTail: '\x07',
    signalAttempts: [],
  });
  t.notMatch(text.replace(/\n/g, ''), UNSAFE);
  t.match(text, /^deployment id\\x1b\[31m\\n2 \(web\\x1b/m);
  t.match(text, /^ {2}\| one\\x1b\[2J$/m);
  t.match(text, /^ {2}\| two\\r$/m);
});

t.test('doctor: causes and fixes escaped', async (t) => {
  const text = formatDoctor(reportOf([fail('source.local', `bad file ${HOSTILE}`, 'fix \x1b[8m it')]));
  assertSafe(t, text, 1);
  t.match(text, /-- fix \\x1b\[8m it$/m);
});
