import t from 'tap';
import { displayMetadata } from '../../src/cfntools/get-metadata.js';
import { seededRandom } from '../helpers/fault-daemon.js';

// cfn-get-metadata's output: json.dumps of the metadata or of the value at -k's path (the conformance test compares it
// with heat-cfntools' on a real run).

const md = { a: { b: [1, 'x'], 'c.d': { e: 'é' }, n: null }, top: true };

t.test('the whole metadata, and key paths', async (t) => {
  t.equal(displayMetadata(md), '{"a": {"b": [1, "x"], "c.d": {"e": "\\u00e9"}, "n": null}, "top": true}\n');
  t.equal(displayMetadata(md, 'a.b'), '[1, "x"]\n');
  t.equal(displayMetadata(md, "a.'c.d'.e"), '"\\u00e9"\n', 'a quoted key may hold dots');
  t.equal(displayMetadata(md, 'top'), 'true\n');
  t.equal(displayMetadata(md, 'a.'), '{"b": [1, "x"], "c.d": {"e": "\\u00e9"}, "n": null}\n', 'a trailing dot');
  for (const missing of ['a.zz', 'zz', 'a.b.0', 'a.n', '', "'unclosed", 'a..b', 'toString', '__proto__'])
    t.equal(displayMetadata(md, missing), undefined, `${JSON.stringify(missing)} prints nothing`);
  t.equal(displayMetadata(undefined), undefined, 'no metadata, nothing printed');
  t.equal(displayMetadata({ a: { a: { b: 1 }, b: 2 } }, 'a.a.b'), '1\n', 'each key taken off the front only');
});

t.test('every path to a value of random metadata prints that value (seeded)', async (t) => {
  const random = seededRandom(4242);
  const names = ['a', 'b', 'key.dot', 'x_y', 'AWS::CloudFormation::Init', 'ñ'];
  const build = (depth: number): unknown => {
    if (depth > 3 || random() < 0.3)
      return random() < 0.5 ? Math.floor(random() * 100) : `v${Math.floor(random() * 9)}`;
    const o: Record<string, unknown> = {};
    for (const n of names) if (random() < 0.4) o[n] = build(depth + 1);
    return o;
  };
  let checked = 0;
  const wrong: string[] = [];
  for (let i = 0; i < 200; i++) {
    const root = build(0);
    const walk = (v: unknown, trail: string[]) => {
      if (trail.length > 0) {
        const key = trail.map((k) => (k.includes('.') ? `'${k}'` : k)).join('.');
        const shown = displayMetadata(root, key);
        if (shown === undefined || JSON.stringify(JSON.parse(shown)) !== JSON.stringify(v)) wrong.push(key);
        checked++;
      }
      if (typeof v === 'object' && v !== null) for (const [k, c] of Object.entries(v)) walk(c, [...trail, k]);
    };
    walk(root, []);
  }
  t.same(wrong, [], 'no path printed something else');
  t.ok(checked > 100, `${checked} paths`);
});
