import t from 'tap';
import { TemplateError } from '../../src/apply/apply-errors.js';
import { parseTemplate } from '../../src/apply/mustache-parse.js';

t.test('text, variables and sections become nodes', async (t) => {
  t.same(parseTemplate('a {{x}} b'), [
    { kind: 'text', text: 'a ' },
    { kind: 'var', name: 'x', path: ['x'] },
    { kind: 'text', text: ' b' },
  ]);
  const [section] = parseTemplate('{{#s}}in{{/s}}');
  t.match(section, { kind: 'section', name: 's', inverted: false, children: [{ kind: 'text', text: 'in' }] });
  t.match(parseTemplate('{{^s}}{{/s}}')[0], { kind: 'section', inverted: true });
  t.same(parseTemplate(''), []);
});

t.test('triple mustache, ampersand and whitespace inside tags are plain variables', async (t) => {
  for (const src of ['{{{ x }}}', '{{&x}}', '{{ x }}', '{{\tx\n}}'])
    t.same(parseTemplate(src), [{ kind: 'var', name: 'x', path: ['x'] }], src);
  t.match(parseTemplate('{{ #s }}{{ /s }}')[0], { kind: 'section', name: 's' });
});

t.test('comments and partials produce nothing; set-delimiter changes the tags', async (t) => {
  t.same(parseTemplate('a{{! note }}b{{> part}}c'), [
    { kind: 'text', text: 'a' },
    { kind: 'text', text: 'b' },
    { kind: 'text', text: 'c' },
  ]);
  t.same(parseTemplate('{{=<% %>=}}<% x %>{{y}}'), [
    { kind: 'var', name: 'x', path: ['x'] },
    { kind: 'text', text: '{{y}}' },
  ]);
});

t.test('standalone tags remove their line; inline ones keep the text around them', async (t) => {
  const nodes = parseTemplate('a\n  {{#s}}\nb\n  {{/s}}\nc\n');
  t.same(nodes[0], { kind: 'text', text: 'a\n' });
  t.match(nodes[1], { kind: 'section', children: [{ kind: 'text', text: 'b\n' }] });
  t.same(nodes[2], { kind: 'text', text: 'c\n' });
  // Trailing spaces after the tag: not standalone (pystache's rule).
  t.same(parseTemplate('{{! c }}  \nx')[0], { kind: 'text', text: '  \nx' });
  // A variable never is standalone.
  t.same(parseTemplate('  {{x}}\n')[0], { kind: 'text', text: '  ' });
});

t.test('malformed templates are errors naming the line', async (t) => {
  const cases: Array<[string, RegExp]> = [
    ['x\n{{#a}}x{{/b}}', /line 2: closing tag \{\{\/b\}\} does not match the section \{\{#a\}\} opened on line 2/],
    ['{{/a}}', /no matching opening tag/],
    ['a\n\n{{#a}}x', /line 3: section \{\{#a\}\} is never closed/],
    ['x {{a', /never closed with "\}\}"/],
    ['{{{a}}', /never closed with "\}\}\}"/],
    ['{{}}', /empty tag name/],
    ['{{#}}{{/}}', /empty tag name/],
    ['{{=a=}}', /set-delimiter tag needs two delimiters/],
  ];
  for (const [src, message] of cases) t.throws(() => parseTemplate(src), message, JSON.stringify(src));
  t.throws(() => parseTemplate('{{/a}}'), TemplateError);
});

t.test('errors name the line of the tag, counting every newline before it', async (t) => {
  t.throws(() => parseTemplate('1\n2\n{{a}}\n4\n{{#b}}x'), /^line 5: section \{\{#b\}\} is never closed/);
  t.throws(
    () => parseTemplate('{{#a}}\n\n\n{{/b}}'),
    /^line 4: closing tag \{\{\/b\}\} does not match the section \{\{#a\}\} opened on line 1/,
  );
  t.throws(() => parseTemplate('\r\n\n  {{'), /^line 3: tag opened/);
});

t.test(
  'whitespace after the opening delimiter: ASCII and Unicode spaces as /\\s/ has them, control characters not',
  async (t) => {
    t.match(parseTemplate('{{\u00a0#s}}{{/s}}')[0], { kind: 'section', name: 's' }, 'no-break space');
    t.match(parseTemplate('{{\u2003#s}}{{/s}}')[0], { kind: 'section', name: 's' }, 'em space');
    t.match(parseTemplate('{{\v#s}}{{/s}}')[0], { kind: 'section', name: 's' }, 'vertical tab');
    t.same(
      parseTemplate('{{\u0001#s}}'),
      [{ kind: 'var', name: '\u0001#s', path: ['\u0001#s'] }],
      'a control character is part of the name',
    );
  },
);

t.test(
  'standalone needs the tag alone on its line: text before it, or an earlier tag on the line, keeps the line',
  async (t) => {
    t.same(parseTemplate('x {{! c }}\ny'), [
      { kind: 'text', text: 'x ' },
      { kind: 'text', text: '\ny' },
    ]);
    t.same(
      parseTemplate('{{a}} {{! c }}\ny').map((n) => (n.kind === 'text' ? n.text : n.name)),
      ['a', ' ', '\ny'],
    );
    t.same(parseTemplate('\t {{! c }}\r\ny'), [{ kind: 'text', text: 'y' }], 'tabs and spaces before, CRLF after');
    t.same(parseTemplate('  {{! c }}'), [], 'standalone at the end of the text');
  },
);

t.test('dotted names are split once, at parse time; "." stays whole', async (t) => {
  t.same(
    parseTemplate('{{a.b.c}}{{.}}{{#s.t}}{{/s.t}}').map((n) => (n.kind === 'text' ? n.text : n.path)),
    [['a', 'b', 'c'], ['.'], ['s', 't']],
  );
});
