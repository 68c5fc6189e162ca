import t from 'tap';
import { count, formatTable, oneLine, outputWidth, shortTime } from '../../src/status/text-table.js';

// The text of `status`: tables fit the terminal (the last column cut), and are whole when piped; plurals.

const rows = [
  ['a', 'ok', 'a short error'],
  ['bb', 'failed: 1', `a long error ${'x'.repeat(300)}`],
];

t.test('no width (piped): every cell whole', async (t) => {
  const text = formatTable(['ID', 'RESULT', 'ERROR'], rows);
  t.match(text, /x{300}\n$/);
  t.equal(text.split('\n')[0], 'ID  RESULT     ERROR');
});

t.test('a width: every line fits, the last column is cut with an ellipsis', async (t) => {
  for (let width = 1; width <= 400; width += 7) {
    const lines = formatTable(['ID', 'RESULT', 'ERROR'], rows, width).trimEnd().split('\n');
    const limit = Math.max(width, 'bb  failed: 1  '.length + 16);
    for (const line of lines) t.ok(line.length <= limit, `width ${width}: ${line.length} <= ${limit}`);
  }
  const eighty = formatTable(['ID', 'RESULT', 'ERROR'], rows, 80).split('\n');
  t.equal(eighty[2]!.length, 80);
  t.match(eighty[2], /x…$/);
  t.equal(eighty[1], 'a   ok         a short error', 'what fits is not cut');
});

t.test('oneLine: white space made one space; cut only when a width is given', async (t) => {
  t.equal(oneLine('a\n  b\tc  '), 'a b c');
  t.equal(oneLine('abcdef', 4), 'abc…');
  t.equal(oneLine('abcdef'), 'abcdef');
});

t.test('count: singular for one, plural otherwise', async (t) => {
  t.equal(count(1, 'attempt'), '1 attempt');
  t.equal(count(0, 'attempt'), '0 attempts');
  t.equal(count(2, 'try', 'tries'), '2 tries');
  t.equal(count(1, 'try', 'tries'), '1 try');
});

t.test('outputWidth: $COLUMNS when it is a number, else the terminal, else none', async (t) => {
  t.equal(outputWidth({ COLUMNS: '132' }, { isTTY: false }), 132, 'asked for, even when piped');
  t.equal(outputWidth({ COLUMNS: '100' }, { isTTY: true, columns: 80 }), 100, 'COLUMNS wins');
  t.equal(outputWidth({}, { isTTY: true, columns: 90 }), 90);
  t.equal(outputWidth({}, { isTTY: false, columns: 90 }), undefined, 'a pipe: no limit');
  for (const junk of ['', 'abc', '-5', '0', '1.5', '1e3x'])
    t.equal(outputWidth({ COLUMNS: junk }, { isTTY: false }), undefined, `COLUMNS=${JSON.stringify(junk)}`);
});

t.test('shortTime', async (t) => {
  t.equal(shortTime('2026-02-01T10:00:00.123Z'), '2026-02-01T10:00:00Z');
  t.equal(shortTime(undefined), '-');
});
