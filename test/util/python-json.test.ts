import { spawnSync } from 'node:child_process';
import t from 'tap';
import { pythonJsonDumps } from '../../src/util/python-json.js';

// Each case is JSON source text: both Python's json.loads and JSON.parse read it, then each side dumps it and the
// outputs must be byte-identical. Python runs once for the whole table.
const CASES: readonly string[] = [
  // scalars
  'null',
  'true',
  'false',
  '0',
  '-0',
  '42',
  '-17',
  '9007199254740992',
  '-9007199254740991',
  '1.5',
  '-2.25',
  '0.1',
  '0.30000000000000004',
  '123456.789',
  '1e-07',
  '1.5e-07',
  '1e-05',
  '1.5e-05',
  '0.0001',
  '0.00012',
  '-1.25e-10',
  '5e-324',
  '1e+100',
  '1e+21',
  '1.7976931348623157e308',
  // strings
  '""',
  '"plain ascii"',
  '"quote \\" backslash \\\\ slash /"',
  '"\\u0000\\u0001\\u0007\\b\\t\\n\\u000b\\f\\r\\u001b\\u001f"',
  '"del \\u007f tilde ~ space"',
  '"latin é ß ü"',
  '"cjk 中文 and cyrillic ключ"',
  '"line sep \\u2028 para sep \\u2029"',
  '"astral 😀 and 𝄞"',
  '"lone surrogate \\ud800 end"',
  '"bom \\ufeff zero-width \\u200b"',
  // containers
  '[]',
  '{}',
  '[[]]',
  '[{}]',
  '{"a": {}, "b": [], "c": [[]], "d": [{}], "e": [[], {}]}',
  '[1, "two", 3.5, null, true, false, [4, [5, [6]]]]',
  '{"z": 1, "a": 2, "m": 3, "b": {"y": 1, "x": 2}}',
  '{"ключ": "значение", "😀": ["😀"]}',
  '{"deployments": [{"name": "d1", "group": "os-apply-config", "config": {"k": "v"}, "inputs": []}]}',
  '{"nested": {"deeper": {"deepest": {"list": [1, {"x": null}]}}}}',
];

// indent=None (compact), indent=1 (cache files), indent=0 and indent=2; ensure_ascii on and off.
const VARIANTS: ReadonlyArray<{ label: string; indent?: number; ensureAscii?: boolean; py: string }> = [
  { label: 'compact', py: '{}' },
  { label: 'indent=1', indent: 1, py: '{"indent": 1}' },
  { label: 'indent=0', indent: 0, py: '{"indent": 0}' },
  { label: 'indent=2', indent: 2, py: '{"indent": 2}' },
  { label: 'compact, ensure_ascii=False', ensureAscii: false, py: '{"ensure_ascii": False}' },
  { label: 'indent=1, ensure_ascii=False', indent: 1, ensureAscii: false, py: '{"indent": 1, "ensure_ascii": False}' },
];

const PY_SCRIPT = `
import json, sys
cases = json.loads(sys.stdin.read())
variants = [${VARIANTS.map((v) => v.py).join(', ')}]
out = [[json.dumps(json.loads(c), **kw) for kw in variants] for c in cases]
sys.stdout.write(json.dumps(out))
`;

function runPython(): string[][] | undefined {
  const res = spawnSync('python3', ['-c', PY_SCRIPT], {
    input: JSON.stringify(CASES),
    encoding: 'utf8',
    timeout: 30_000,
  });
  if (res.error || res.status !== 0) return undefined;
  return JSON.parse(res.stdout) as string[][];
}

const expected = runPython();

t.test(
  'matches python3 json.dumps for every case and variant',
  { skip: expected ? false : 'python3 is not available' },
  async (t) => {
    if (!expected) return;
    t.equal(expected.length, CASES.length);
    CASES.forEach((source, i) => {
      VARIANTS.forEach((variant, j) => {
        const options = {
          ...(variant.indent === undefined ? {} : { indent: variant.indent }),
          ...(variant.ensureAscii === undefined ? {} : { ensureAscii: variant.ensureAscii }),
        };
        t.equal(pythonJsonDumps(JSON.parse(source), options), expected[i]?.[j], `${variant.label}: ${source}`);
      });
    });
  },
);

// Fixed expectations (the cache files upstream writes), so these hold without python3 too.
t.test('cache-file form: 1-space indent, no trailing newline', async (t) => {
  t.equal(pythonJsonDumps({ a: 1, nested: { x: 'y' } }, { indent: 1 }), '{\n "a": 1,\n "nested": {\n  "x": "y"\n }\n}');
  t.equal(pythonJsonDumps(['/c/10-base.json.json', '/c/20-more.json']), '["/c/10-base.json.json", "/c/20-more.json"]');
  t.equal(pythonJsonDumps({ a: [], b: {} }, { indent: 1 }), '{\n "a": [],\n "b": {}\n}');
});

t.test('ASCII escaping of DEL, non-ASCII and astral characters', async (t) => {
  t.equal(pythonJsonDumps('\u007f'), '"\\u007f"');
  t.equal(pythonJsonDumps('\u007f', { ensureAscii: false }), '"\u007f"', 'DEL is not escaped without ensure_ascii');
  t.equal(pythonJsonDumps('é'), '"\\u00e9"');
  t.equal(pythonJsonDumps('😀'), '"\\ud83d\\ude00"');
  t.equal(pythonJsonDumps('\u0001\n'), '"\\u0001\\n"');
  t.equal(pythonJsonDumps('\u0001', { ensureAscii: false }), '"\\u0001"', 'control characters are escaped either way');
});

t.test('float formatting follows Python repr', async (t) => {
  t.equal(pythonJsonDumps(1e-7), '1e-07');
  t.equal(pythonJsonDumps(0.00001), '1e-05', 'Python switches to exponent form below 1e-4');
  t.equal(pythonJsonDumps(0.000015), '1.5e-05');
  t.equal(pythonJsonDumps(0.0001), '0.0001');
  t.equal(pythonJsonDumps(1e100), '1e+100');
  t.equal(pythonJsonDumps(1.5), '1.5');
  t.equal(pythonJsonDumps(NaN), 'NaN');
  t.equal(pythonJsonDumps(Infinity), 'Infinity');
  t.equal(pythonJsonDumps(-Infinity), '-Infinity');
});

t.test('documented limits: zero-fraction floats print as integers, -0 as 0', async (t) => {
  // Python prints 2.0 and 1e+16 for floats, 2 and 10000000000000000 for ints; a JavaScript number cannot say which.
  t.equal(pythonJsonDumps(JSON.parse('2.0')), '2');
  t.equal(pythonJsonDumps(1e16), '10000000000000000');
  t.equal(pythonJsonDumps(-0), '0', 'as Python prints the integer -0');
});

t.test('non-JSON values (undefined, functions) print null', async (t) => {
  t.equal(pythonJsonDumps(undefined), 'null');
  t.equal(pythonJsonDumps([undefined, 1]), '[null, 1]');
  t.equal(
    pythonJsonDumps(() => 1),
    'null',
  );
});

t.test('key order is kept as given, not sorted', async (t) => {
  const value = { zeta: 1, alpha: 2, mid: { b: 1, a: 2 } };
  t.equal(pythonJsonDumps(value), '{"zeta": 1, "alpha": 2, "mid": {"b": 1, "a": 2}}');
});
