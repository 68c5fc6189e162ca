import t from 'tap';
import { interpolateValue, isTruthy, renderTemplate } from '../../src/apply/render-template.js';

const render = (src: string, ctx: unknown) => renderTemplate(src, ctx).text;

t.test('values interpolate as os-apply-config prints them', async (t) => {
  t.equal(render('{{s}}|{{{s}}}|{{&s}}', { s: '<a & "b">' }), '<a & "b">|<a & "b">|<a & "b">', 'no HTML escaping');
  t.equal(render('{{i}} {{f}} {{b}} {{n}}', { i: 80, f: 1.5, b: true, n: null }), '80 1.5 true ');
  t.equal(render('{{l}}', { l: ['a', null, 2] }), '["a", null, 2]');
  t.equal(render('{{o}}', { o: { k: 'v', e: {} } }), '{"k": "v", "e": {}}');
  t.equal(render('{{u}}|{{lu}}', { u: 'café', lu: ['café'] }), 'café|["caf\\u00e9"]');
  t.equal(interpolateValue(undefined), '');
});

t.test('dotted names walk objects only, first segment from the innermost frame', async (t) => {
  t.equal(render('{{a.b.c}}', { a: { b: { c: 'deep' } } }), 'deep');
  t.equal(render('{{a.0}}', { a: [1] }), '', 'no array indexing');
  t.equal(render('{{#a}}{{b.c}}{{/a}}', { a: { q: 1 }, b: { c: 'outer' } }), 'outer');
  t.equal(
    render('{{#a}}{{b.c}}{{/a}}', { a: { b: {} }, b: { c: 'outer' } }),
    '',
    'resolution does not fall back after the first segment',
  );
  t.equal(render('{{constructor}}{{__proto__}}', {}), '', 'no inherited members');
  t.same(
    renderTemplate('{{toString}}{{a.valueOf}}{{a.__proto__}}{{#hasOwnProperty}}x{{/hasOwnProperty}}', { a: {} })
      .missing,
    ['toString', 'a.valueOf', 'a.__proto__'],
  );
  const own = JSON.parse('{"constructor": "c", "__proto__": "p", "toString": {"k": 1}}') as unknown;
  t.equal(render('{{constructor}} {{__proto__}} {{toString.k}}', own), 'c p 1', 'own members of those names are found');
});

t.test('sections: lists iterate, objects and scalars push, falsy values skip', async (t) => {
  t.equal(render('{{#l}}[{{.}}]{{/l}}', { l: [1, 'x', null, { k: 1 }] }), '[1][x][][{"k": 1}]');
  t.equal(render('{{#l}}{{name}}{{sep}},{{/l}}', { l: [{ name: 'a' }, { name: 'b', sep: ';' }], sep: '-' }), 'a-,b;,');
  t.equal(render('{{#o}}{{k}}{{/o}}', { o: { k: 'v' } }), 'v');
  t.equal(render('{{#s}}<{{.}}>{{/s}}', { s: 'str' }), '<str>');
  t.equal(render('{{#n}}{{.}}{{/n}}', { n: 5 }), '5');
  t.equal(render('{{#l}}{{#.}}{{.}}{{/.}};{{/l}}', { l: [[1, 2], [3]] }), '12;3;');
  for (const falsy of [false, null, 0, '', [], {}]) {
    t.equal(render('{{#v}}yes{{/v}}{{^v}}no{{/v}}', { v: falsy }), 'no', JSON.stringify(falsy));
  }
  t.equal(render('{{#v}}yes{{/v}}', { v: '0' }), 'yes', 'the string "0" is true');
  t.equal(render('{{^missing}}absent{{/missing}}', {}), 'absent');
});

t.test('missing variables render empty and are reported once each', async (t) => {
  const res = renderTemplate('{{a}}{{a}}{{b.c}}{{#s}}{{d}}{{/s}}{{#gone}}{{e}}{{/gone}}', { b: {}, s: true });
  t.equal(res.text, '');
  t.same(res.missing, ['a', 'b.c', 'd'], 'variables only; a missing section is a plain false');
  t.same(renderTemplate('{{n}}', { n: null }).missing, [], 'null is present');
});

t.test('truthiness follows Python', async (t) => {
  t.notOk(isTruthy(undefined));
  t.ok(isTruthy([0]));
  t.ok(isTruthy({ a: null }));
  t.ok(isTruthy(-1));
});
