import t from 'tap';
import { emptyIni, iniValue, IniSyntaxError, readIni, type IniDocument } from '../../src/cfntools/python-ini.js';
import { seededRandom } from '../helpers/fault-daemon.js';

// cfn-hup's files read as Python's configparser (heat-cfntools' reader) reads them; checked against what
// configparser itself answers for the same text.

function read(...files: Array<[string, string]>): IniDocument {
  const doc = emptyIni();
  for (const [name, text] of files) readIni(doc, text, name);
  return doc;
}
const value = (doc: IniDocument, section: string, key: string) =>
  iniValue(
    doc,
    doc.sections.find((s) => s.name === section)!,
    key,
  );

t.test('sections, both delimiters, comments, continuation lines, DEFAULT, lower-cased keys', async (t) => {
  const doc = read([
    'a.conf',
    '# comment\n; another\n[DEFAULT]\nrunas = root\n\n[main]\nStack: demo\ncredential-file=/etc/cfn/c\n' +
      '[hook]\ntriggers = post.update ,post.add\naction = echo one\n  echo two\n   # indented comment\npath=Resources.a.Metadata\n',
  ]);
  t.same(
    doc.sections.map((s) => s.name),
    ['main', 'hook'],
    'DEFAULT is not a section',
  );
  t.equal(value(doc, 'main', 'stack'), 'demo', 'keys are lower-cased; ":" splits as "=" does');
  t.equal(value(doc, 'main', 'credential-file'), '/etc/cfn/c');
  t.equal(value(doc, 'hook', 'triggers'), 'post.update ,post.add', 'the value trimmed at its ends only');
  t.equal(value(doc, 'hook', 'action'), 'echo one\necho two', 'an indented line continues the value');
  t.equal(value(doc, 'hook', 'runas'), 'root', 'DEFAULT is inherited');
  t.equal(value(doc, 'main', 'nothing'), undefined);
  t.equal(value(doc, 'hook', 'path'), 'Resources.a.Metadata');
});

t.test('a section in two files is one section; a later value wins', async (t) => {
  const doc = read(['a', '[h]\naction = one\nrunas = x\n'], ['b', '[h]\naction = two\n']);
  t.equal(doc.sections.length, 1);
  t.equal(value(doc, 'h', 'action'), 'two');
  t.equal(value(doc, 'h', 'runas'), 'x');
});

t.test("interpolation as configparser's default: %% and %(key)s; a lone % is an error", async (t) => {
  const doc = read([
    'a',
    '[DEFAULT]\nbase = /srv\n[h]\ndir = %(base)s/app\naction = date +%%s > %(dir)s/stamp\nbad = 100%\nloop = %(loop)s\nmissing = %(nope)s\n',
  ]);
  t.equal(value(doc, 'h', 'action'), 'date +%s > /srv/app/stamp');
  t.throws(() => value(doc, 'h', 'bad'), /a lone "%"/);
  t.throws(() => value(doc, 'h', 'loop'), /nest too deeply/);
  t.throws(() => value(doc, 'h', 'missing'), /names no key/);
});

t.test('syntax errors name the file and line', async (t) => {
  const bad: Array<[string, RegExp]> = [
    ['key = before any section\n', /a line before the first \[section\] header/],
    ['[a]\njust a line\n', /line 2: "just a line" is not "key = value"/],
    ['[a]\n= value\n', /not "key = value"/],
    ['[a]\nx = 1\n[a]\n', /line 3: section \[a\] appears twice/],
    ['[a]\nx = 1\nX = 2\n', /line 3: "x" is given twice/],
  ];
  for (const [text, expected] of bad) {
    const err = (() => {
      try {
        read(['hooks.d/x.conf', text]);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    t.ok(err instanceof IniSyntaxError, JSON.stringify(text));
    t.match(String((err as Error).message), /^hooks\.d\/x\.conf line \d+: /);
    t.match(String((err as Error).message), expected);
  }
});

t.test('any text: read or refused with IniSyntaxError, never another failure (seeded fuzz)', async (t) => {
  const random = seededRandom(2911);
  const pieces = [
    '[',
    ']',
    '[main]',
    '[h]',
    '=',
    ':',
    ' ',
    '\n',
    '\r\n',
    '#',
    ';',
    'key',
    'Val',
    '%',
    '%(key)s',
    '\t',
    'é',
    '\0',
  ];
  let read = 0;
  for (let i = 0; i < 2000; i++) {
    const text = Array.from(
      { length: 1 + Math.floor(random() * 30) },
      () => pieces[Math.floor(random() * pieces.length)],
    ).join('');
    const doc = emptyIni();
    try {
      readIni(doc, text, 'fuzz');
      read++;
      for (const section of doc.sections)
        for (const key of section.values.keys())
          try {
            iniValue(doc, section, key);
          } catch (err) {
            if (!/%|nest|names no key/.test((err as Error).message)) throw err;
          }
    } catch (err) {
      if (!(err instanceof IniSyntaxError)) {
        t.fail(`unexpected ${(err as Error).message} for ${JSON.stringify(text)}`);
        return;
      }
    }
  }
  t.ok(read > 100, `some texts were valid (${read})`);
});
