import { chmodSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { readTemplateSource } from '../../src/apply/template-source.js';

t.test('a template is its text, read as UTF-8 with universal newlines', async (t) => {
  const dir = t.testdir({ plain: 'a = {{a}}\n', crlf: 'x\r\ny\rz\r\n', empty: '' });
  t.same(readTemplateSource(path.join(dir, 'plain')), { executable: false, text: 'a = {{a}}\n' });
  t.same(readTemplateSource(path.join(dir, 'crlf')), { executable: false, text: 'x\ny\nz\n' });
  t.same(readTemplateSource(path.join(dir, 'empty')), { executable: false, text: '' });
  const big = 'line {{x}}\n'.repeat(50_000);
  writeFileSync(path.join(dir, 'big'), big);
  t.equal((readTemplateSource(path.join(dir, 'big')) as { text: string }).text, big, 'a large file is read whole');
});

t.test('a byte-order mark is kept, as Python reads "utf-8"', async (t) => {
  const dir = t.testdir({});
  writeFileSync(path.join(dir, 'bom'), Buffer.from([0xef, 0xbb, 0xbf, 0x61]));
  t.same(readTemplateSource(path.join(dir, 'bom')), { executable: false, text: '\ufeffa' });
});

t.test('a template that holds U+FFFD itself is valid UTF-8 and reads as it is', async (t) => {
  const dir = t.testdir({ replacement: 'before \ufffd after\n' });
  t.same(readTemplateSource(path.join(dir, 'replacement')), { executable: false, text: 'before \ufffd after\n' });
});

t.test('an executable file is a config script and is not read', async (t) => {
  const dir = t.testdir({ script: '#!/bin/sh\necho hi\n', group: '#!/bin/sh\n', bad: Buffer.from([0xff]) });
  chmodSync(path.join(dir, 'script'), 0o755);
  t.same(readTemplateSource(path.join(dir, 'script')), { executable: true });
  chmodSync(path.join(dir, 'bad'), 0o700);
  t.same(readTemplateSource(path.join(dir, 'bad')), { executable: true }, 'its bytes do not matter');
});

t.test('unreadable and non-UTF-8 templates are clear errors naming the file', async (t) => {
  const dir = t.testdir({ latin1: Buffer.from([0x63, 0x61, 0x66, 0xe9]) });
  t.throws(() => readTemplateSource(path.join(dir, 'latin1')), {
    code: 'ERR_TEMPLATE',
    message: /could not read template .*latin1 \(not valid UTF-8\)/,
  });
  t.throws(() => readTemplateSource(path.join(dir, 'missing')), {
    code: 'ERR_TEMPLATE',
    message: /could not read template .*missing \(ENOENT\)/,
  });
  t.throws(() => readTemplateSource(dir), { code: 'ERR_TEMPLATE', message: /is not a regular file/ });
});
