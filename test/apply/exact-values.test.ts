import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { renderTemplate } from '../../src/apply/render-template.js';
import { parsePythonJson } from '../../src/util/python-json-parse.js';

// Values in templates render as Debian's os-apply-config renders them from the same metadata text: 1e400 as Infinity,
// 1.0 as 1.0, big integers whole, -0.0, 1E5 as 100000.0, NaN, a repeated key's last value, lone surrogates escaped.

const METADATA =
  '{"a": 1e400, "b": 1.0, "c": 12345678901234567890, "d": NaN, "e": -0.0, "f": 1E5, "g": [1.0, {"h": 2.50}],' +
  ' "k": 1, "k": 9007199254740993, "s": "\\ud800 and \\u00e9", "z": 0.0}';
const TEMPLATE = '{{a}} {{b}} {{c}} {{d}} {{e}} {{f}} {{g}} {{k}}{{#z}} z is true{{/z}}{{^z}} z is false{{/z}}\n';

t.test('values render as os-apply-config renders them', async (t) => {
  const dir = t.testdir();
  mkdirSync(path.join(dir, 't/etc'), { recursive: true });
  writeFileSync(path.join(dir, 't/etc/x'), TEMPLATE);
  writeFileSync(path.join(dir, 'md.json'), METADATA);
  const run = spawnSync('os-apply-config', ['-t', 't', '-m', 'md.json', '-o', 'out'], { cwd: dir, encoding: 'utf8' });
  t.equal(run.status, 0, run.stderr);
  const upstream = readFileSync(path.join(dir, 'out/etc/x'), 'utf8');
  t.equal(
    upstream,
    'Infinity 1.0 12345678901234567890 NaN -0.0 100000.0 [1.0, {"h": 2.5}] 9007199254740993 z is false\n',
  );
  const ours = renderTemplate(TEMPLATE, parsePythonJson(METADATA));
  t.same(ours.missing, []);
  t.equal(ours.text, upstream);
});

t.test('a lone surrogate cannot be written to a file: os-apply-config dies, the agent names the key', async (t) => {
  const dir = t.testdir();
  mkdirSync(path.join(dir, 't/etc'), { recursive: true });
  writeFileSync(path.join(dir, 't/etc/x'), '{{s}}\n');
  writeFileSync(path.join(dir, 'md.json'), '{"s": "a\\ud800b"}');
  const run = spawnSync('os-apply-config', ['-t', 't', '-m', 'md.json', '-o', 'out'], { cwd: dir, encoding: 'utf8' });
  t.not(run.status, 0);
  t.match(run.stderr, /UnicodeEncodeError/);
  t.throws(() => renderTemplate('{{s}}\n', parsePythonJson('{"s": "a\\ud800b"}')), {
    name: 'TemplateError',
    message: /the value of \{\{s\}\} holds a lone UTF-16 surrogate/,
  });
  t.equal(
    renderTemplate('{{s}}', parsePythonJson('{"s": "\\ud83d\\ude00"}')).text,
    '\u{1f600}',
    'a pair is one character',
  );
});
