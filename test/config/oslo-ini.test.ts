import t from 'tap';
import { interpolate, parseOsloIni, stringifyOsloIni, type IniDocument } from '../../src/config/oslo-ini.js';

const asObject = (doc: IniDocument) => Object.fromEntries([...doc].map(([s, opts]) => [s, Object.fromEntries(opts)]));

t.test('sections, keys and repeated keys (multi-valued options)', async (t) => {
  const { doc, problems } = parseOsloIni(
    [
      '[DEFAULT]',
      'command = os-refresh-config',
      'collectors = heat_local',
      'collectors = cfn',
      'collectors = local',
      '',
      '[cfn]',
      'metadata_url = http://h:8000/v1/',
      '[DEFAULT]',
      'polling_interval = 5',
    ].join('\n'),
  );
  t.same(problems, []);
  t.same(asObject(doc), {
    DEFAULT: { command: ['os-refresh-config'], collectors: ['heat_local', 'cfn', 'local'], polling_interval: ['5'] },
    cfn: { metadata_url: ['http://h:8000/v1/'] },
  });
});

t.test("'#' and ';' inside values are kept; only whole-line comments are comments", async (t) => {
  const { doc, problems } = parseOsloIni(
    '# leading comment\n; another\n[heat]\npassword = ab#cd;ef # not a comment\nuser_id = u ; still value\n#commented = x\n;semi = y\n',
  );
  t.same(problems, []);
  t.same(asObject(doc), { heat: { password: ['ab#cd;ef # not a comment'], user_id: ['u ; still value'] } });
});

t.test('one pair of matching quotes is stripped; unmatched quotes stay', async (t) => {
  const { doc } = parseOsloIni(
    `[s]\na = "quoted value"\nb = 'single'\nc = "mixed'\nd = ""\ne = "\nf = "a"b"\ng = ' padded '\nh = x"y"\n`,
  );
  t.same(asObject(doc).s, {
    a: ['quoted value'],
    b: ['single'],
    c: [`"mixed'`],
    d: [''],
    e: [''],
    f: ['a"b'],
    g: [' padded '],
    h: ['x"y"'],
  });
});

t.test('key: value, the first of ":" or "=" separates, whitespace trimmed', async (t) => {
  const { doc } = parseOsloIni('[s]\nkey: value\nurl = http://h:80/x\nk2:v=2\n  \t\nspaced   =   v  \nempty =\n');
  t.same(asObject(doc).s, { key: ['value'], url: ['http://h:80/x'], k2: ['v=2'], spaced: ['v'], empty: [''] });
});

t.test('continuation lines extend the previous value until a blank line, comment or new key', async (t) => {
  const { doc, problems } = parseOsloIni(
    '[s]\ncommand = line one\n    line two\n\tline three\nnext = x\n\n  after blank = y\n',
  );
  t.same(asObject(doc).s, { command: ['line one\nline two\nline three'], next: ['x'], 'after blank': ['y'] });
  t.same(problems, []);
  const afterComment = parseOsloIni('[s]\na = 1\n# comment\n  b = 2\n');
  t.same(asObject(afterComment.doc).s, { a: ['1'], b: ['2'] }, 'a comment ends the value above it');
});

t.test('CRLF line endings', async (t) => {
  const { doc, problems } = parseOsloIni('[DEFAULT]\r\ncommand = x\r\ncollectors = local\r\n');
  t.same(problems, []);
  t.same(asObject(doc), { DEFAULT: { command: ['x'], collectors: ['local'] } });
});

t.test('problems are reported with line numbers and parsing continues', async (t) => {
  const { doc, problems } = parseOsloIni(
    ['orphan = 1', '[DEFAULT', '[]', '[ok]', 'no separator here', '= novalue', 'good = yes'].join('\n'),
  );
  t.same(problems, [
    { line: 1, message: 'option outside any [section]' },
    { line: 2, message: 'invalid section header "[DEFAULT"' },
    { line: 3, message: 'invalid section header "[]"' },
    { line: 5, message: 'expected "key = value", got "no separator here"' },
    { line: 6, message: 'expected "key = value", got "= novalue"' },
  ]);
  t.same(asObject(doc), { ok: { good: ['yes'] } });
  const long = parseOsloIni(`[s]\n${'x'.repeat(100)}\n`);
  t.match(
    long.problems[0]?.message,
    /^expected "key = value", got "x{57}\.\.\."$/,
    'long lines are truncated in messages',
  );
});

t.test('a section repeated later in the file is the same section', async (t) => {
  const { doc } = parseOsloIni('[a]\nx = 1\n[b]\ny = 2\n[a]\nx = 3\n');
  t.same(asObject(doc), { a: { x: ['1', '3'] }, b: { y: ['2'] } });
});

t.test('stringify: one line per value, sections separated, trailing newline', async (t) => {
  const text = stringifyOsloIni([
    [
      'DEFAULT',
      [
        ['command', 'os-refresh-config'],
        ['collectors', ['ec2', 'local']],
      ],
    ],
    [
      'heat',
      [
        ['password', 'p$w'],
        ['user_id', 'u'],
      ],
    ],
  ]);
  t.equal(
    text,
    '[DEFAULT]\ncommand = os-refresh-config\ncollectors = ec2\ncollectors = local\n\n[heat]\npassword = p$$w\nuser_id = u\n',
  );
});

t.test('stringify then parse then interpolate gives the original values back', async (t) => {
  const values = [
    'plain',
    'with $dollar and ${braced} and $$',
    '  leading and trailing  ',
    '"quoted"',
    "'single'",
    '"',
    '#hash;semi',
    'ab#cd',
    '',
    'key = value',
    'ünïcödé',
    'ends with $',
    '$',
  ];
  const text = stringifyOsloIni([['s', values.map((v, i) => [`k${i}`, v] as [string, string])]]);
  const { doc, problems } = parseOsloIni(text);
  t.same(problems, []);
  const unknown: string[] = [];
  values.forEach((v, i) => {
    const read = doc.get('s')?.get(`k${i}`)?.[0] ?? 'MISSING';
    t.equal(
      interpolate(
        read,
        () => 'SUBSTITUTED',
        (n) => unknown.push(n),
      ),
      v,
      JSON.stringify(v),
    );
  });
  t.same(unknown, [], 'no reference was seen: every $ was escaped');
  const multi = stringifyOsloIni([['DEFAULT', [['collectors', ['a', 'b', 'c']]]]]);
  t.same(parseOsloIni(multi).doc.get('DEFAULT')?.get('collectors'), ['a', 'b', 'c']);
});

t.test('stringify turns line breaks into spaces (a value is one line)', async (t) => {
  const text = stringifyOsloIni([['s', [['k', 'a\nb\r\nc']]]]);
  t.equal(text, '[s]\nk = a b c\n');
});

t.test('interpolate: $name, ${name}, $group.name, $$ and \\$', async (t) => {
  const table: Record<string, string> = { cachedir: '/var/lib/occ', x: 'X', 'heat.user_id': 'uid', OS: 'upper' };
  const unknown: string[] = [];
  const run = (v: string) =>
    interpolate(
      v,
      (n) => table[n],
      (n) => unknown.push(n),
    );
  t.equal(run('$cachedir/backup'), '/var/lib/occ/backup');
  t.equal(run('${cachedir}backup'), '/var/lib/occbackup');
  t.equal(run('$x$x${x}'), 'XXX');
  t.equal(run('id=$heat.user_id'), 'id=uid', 'dotted group.option names');
  t.equal(run('${heat.user_id}'), 'uid');
  t.equal(run('$OS'), 'upper', 'names are any case');
  t.equal(run('cost $$5 and $$x'), 'cost $5 and $x', '$$ is a literal $');
  t.equal(run('a\\$x'), 'a$x', '\\$ is a literal $ too');
  t.equal(run('$ alone, $1, $-x, trailing $'), '$ alone, $1, $-x, trailing $', 'a $ not followed by a name stays');
  t.same(unknown, []);
  t.equal(
    run('echo $OS_CONFIG_FILES and ${missing}'),
    'echo $OS_CONFIG_FILES and ${missing}',
    'unknown names kept as written',
  );
  t.same(unknown, ['OS_CONFIG_FILES', 'missing'], 'and reported');
});
