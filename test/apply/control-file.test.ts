import path from 'node:path';
import t from 'tap';
import { DEFAULT_CONTROL, parseControlFile, readControlFile } from '../../src/apply/control-file.js';

t.test('keys and YAML 1.1 values', async (t) => {
  t.same(await parseControlFile('mode: 0644\nallow_empty: no\n', 'f.oac'), {
    mode: 0o644,
    uid: undefined,
    gid: undefined,
    allowEmpty: false,
  });
  t.same(await parseControlFile('owner: root\ngroup: 0\n', 'f.oac'), { ...DEFAULT_CONTROL, uid: 0, gid: 0 });
  t.same(await parseControlFile('owner: 65534\ngroup: nogroup\n', 'f.oac'), {
    ...DEFAULT_CONTROL,
    uid: 65534,
    gid: 65534,
  });
  t.same(await parseControlFile('mode: 0\n', 'f.oac'), { ...DEFAULT_CONTROL, mode: 0 });
  t.same(await parseControlFile('allow_empty: true\n', 'f.oac'), DEFAULT_CONTROL);
});

t.test('empty or comment-only files mean defaults; no file means defaults', async (t) => {
  t.same(await parseControlFile('', 'f.oac'), DEFAULT_CONTROL);
  t.same(await parseControlFile('# nothing\n', 'f.oac'), DEFAULT_CONTROL);
  t.same(await readControlFile(undefined), DEFAULT_CONTROL);
});

t.test('invalid control files are clear errors', async (t) => {
  const cases: Array<[string, RegExp]> = [
    [
      'colour: blue\n',
      /f\.oac: unrecognised file control key 'colour' \(known keys: mode, owner, group, allow_empty\)/,
    ],
    ['body: x\n', /unrecognised file control key 'body'/],
    ['- mode\n', /header is not a dict/],
    ['just text\n', /header is not a dict/],
    ['mode: "0644"\n', /mode '0644' is not numeric/],
    ['mode: 0o644\n', /mode '0o644' is not numeric/],
    ['mode: true\n', /mode true is not numeric/],
    ['mode: 01777\n', /mode 01777 out of range/],
    ['mode: -1\n', /out of range/],
    ['allow_empty: "no"\n', /allow_empty requires a boolean/],
    ['owner: no-such-user-oac\n', /owner 'no-such-user-oac' not found in passwd database/],
    ['group: no-such-group-oac\n', /group 'no-such-group-oac' not found in group database/],
    ['owner: 4000000\n', /owner '4000000' not found/],
    ['owner: [a]\n', /must be a name or a numeric id/],
    ['mode: [\n', /not valid YAML/],
    ['mode: 1\nmode: 2\n', /not valid YAML/],
  ];
  for (const [text, message] of cases)
    await t.rejects(parseControlFile(text, 'f.oac'), { code: 'ERR_CONTROL_FILE', message }, JSON.stringify(text));
});

t.test('an unreadable control file is an error', async (t) => {
  const dir = t.testdir({ d: {} });
  await t.rejects(readControlFile(path.join(dir, 'd')), {
    code: 'ERR_CONTROL_FILE',
    message: /cannot read control file/,
  });
});
