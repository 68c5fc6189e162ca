import fc from 'fast-check';
import t from 'tap';
import { ExactNumber } from '../../src/util/exact-number.js';
import { pythonJsonDumps } from '../../src/util/python-json.js';
import { parsePythonJson, PythonJsonError } from '../../src/util/python-json-parse.js';
import { jsonTextArbitrary } from '../helpers/json-arbitraries.js';
import { startPythonJsonOracle } from '../helpers/python-json-oracle.js';

// The agent reads JSON as Python's json reads it: checked against python3 itself on generated texts (numbers of
// every form, unicode with lone surrogates, repeated keys, whitespace, invalid texts), a fixed number of runs with the
// seed printed on failure (fast-check's report), so the run is bounded and any failure can be replayed.

const RUNS = 300;

t.test('generated texts: the agent and python3 print the same, or both refuse', async (t) => {
  const oracle = startPythonJsonOracle();
  t.teardown(() => oracle.close());
  await fc.assert(
    fc.asyncProperty(jsonTextArbitrary(), fc.constantFrom(undefined, 1), async (text, indent) => {
      const python = await oracle.roundTrip(text, indent);
      let ours: string | { error: string };
      try {
        ours = pythonJsonDumps(parsePythonJson(text), indent === undefined ? {} : { indent });
      } catch (err) {
        ours = { error: (err as Error).name };
      }
      if ('ok' in python) return ours === python.ok;
      return typeof ours !== 'string';
    }),
    { numRuns: RUNS },
  );
});

t.test('a text that is not JSON: Python refuses it, and so does the agent, saying where', async (t) => {
  const oracle = startPythonJsonOracle();
  t.teardown(() => oracle.close());
  for (const text of [
    '',
    '{',
    '[1,]',
    '{"a" 1}',
    '01',
    '1.',
    '.5',
    '+1',
    'nan',
    '"\\x"',
    '"a\nb"',
    '\ufeff{}',
    '{} x',
  ]) {
    t.match(await oracle.roundTrip(text), { error: /Error$/ }, `python refuses ${JSON.stringify(text)}`);
    t.throws(() => parsePythonJson(text), PythonJsonError, `the agent refuses ${JSON.stringify(text)}`);
  }
  t.throws(() => parsePythonJson('{"a": 1,\n "b" 2}'), {
    message: "expecting ':' delimiter: line 2 column 6 (char 14)",
  });
});

// JavaScript lists integer-like keys first; Python keeps every key where it came. Each text is written back as python3
// writes it, through the engine's JSON.parse path (no float anywhere) and through the exact reader (a float beside).
t.test('integer-like keys keep their place, as in a Python dict', async (t) => {
  const oracle = startPythonJsonOracle();
  t.teardown(() => oracle.close());
  const objects = [
    '{"b": 1, "3": 2}',
    '{"10": 1, "9": 2, "a": 3, "0": 4}',
    '{"a": {"z": 1, "1": [{"y": 2, "2": 3}]}}',
    '{"b": 1, "3": 2, "b": 5, "3": 6}',
    '{"b": 1, "\\u0033": 2}',
    '{"b": 1, "4294967294": 2, "4294967295": 3, "007": 4, "-1": 5}',
    '{"0": 1, "1": 2, "x": 3}',
  ];
  for (const object of objects) {
    for (const text of [object, `[${object}, 0.5]`]) {
      const python = await oracle.roundTrip(text);
      t.same(python, { ok: pythonJsonDumps(parsePythonJson(text)) }, text);
    }
  }
  t.equal(pythonJsonDumps(parsePythonJson('{"b": 1, "3": 2}')), '{"b": 1, "3": 2}', 'checked against a fixed text too');
  t.same(
    Object.keys(parsePythonJson('{"b": 1, "3": 2}') as object),
    ['3', 'b'],
    'the object itself is as JavaScript has it',
  );
});

t.test('numbers a double cannot carry are kept exact; the others stay plain numbers', async (t) => {
  t.equal(parsePythonJson('42'), 42);
  t.equal(parsePythonJson('0.5'), 0.5);
  t.equal(parsePythonJson('1e400'), Infinity);
  t.ok(Number.isNaN(parsePythonJson('NaN')));
  const big = parsePythonJson('[12345678901234567890, 1.0]') as ExactNumber[];
  t.ok(big[0] instanceof ExactNumber);
  t.equal(big[0]?.text, '12345678901234567890');
  t.equal(Number(big[1]), 1, 'arithmetic sees the nearest double');
  t.equal(JSON.stringify(big), '[12345678901234567000,1]', 'JSON.stringify gets the nearest double');
});

// Which reader takes a text is decided by where its numbers stand (a value's place: first, or after ':', '[' or ',').
// A float in each such place keeps its form; digits inside strings (hex ids, times) change nothing.
t.test('a float keeps its form wherever a value stands: alone, first or later in an array, in an object', async (t) => {
  for (const text of ['1.0', ' -2.50 ', '[1.0]', '[\n  1.0\n]', '[0, 1e5]', '{"a": 1.0}', '{"a":[3,\n 2.0]}'])
    t.equal(pythonJsonDumps(parsePythonJson(text)), pythonJsonDumps(parsePythonJson(`[${text}]`)).slice(1, -1), text);
  t.equal(pythonJsonDumps(parsePythonJson('[1.0]')), '[1.0]');
  t.equal(pythonJsonDumps(parsePythonJson('[\n 2.50e1 ]')), '[25.0]');
  t.equal(
    pythonJsonDumps(parsePythonJson('{"id": "5c1e-2E9", "t": "10:31:06.592Z", "n": 1.0}')),
    '{"id": "5c1e-2E9", "t": "10:31:06.592Z", "n": 1.0}',
  );
  t.equal(pythonJsonDumps(parsePythonJson('{"s": "x:1.5,", "n": 2}')), '{"s": "x:1.5,", "n": 2}');
});

/** Whether reading `text` is refused for its depth alone. */
function refusedAsTooDeep(text: string, maxDepth: number): boolean {
  try {
    parsePythonJson(text, { maxDepth });
    return false;
  } catch (err) {
    return err instanceof PythonJsonError && err.tooDeep;
  }
}

t.test('nesting: 20,000 levels read without the call stack; refused past maxDepth', async (t) => {
  const deep = `${'['.repeat(20_000)}${']'.repeat(20_000)}`;
  t.doesNotThrow(() => parsePythonJson(deep));
  t.throws(() => parsePythonJson(deep, { maxDepth: 512 }), { message: 'JSON nested deeper than 512 levels' });
  t.ok(refusedAsTooDeep(deep, 512));
  const slow = `${'{"x": '.repeat(600)}1.0${'}'.repeat(600)}`;
  t.ok(refusedAsTooDeep(slow, 512), 'also on the exact reader');
  t.doesNotThrow(() => parsePythonJson(`${'['.repeat(512)}1.0${']'.repeat(512)}`, { maxDepth: 512 }));
  t.doesNotThrow(() => parsePythonJson(`${'['.repeat(512)}${']'.repeat(512)}`, { maxDepth: 512 }));
  t.ok(refusedAsTooDeep(`${'['.repeat(513)}${']'.repeat(513)}`, 512));
});

t.test('a repeated key keeps its first position and its last value; "__proto__" is a key', async (t) => {
  const value = parsePythonJson('{"a": 1.0, "b": 2, "a": 3.0, "__proto__": {"polluted": true}}') as Record<
    string,
    unknown
  >;
  t.same(Object.keys(value), ['a', 'b', '__proto__']);
  t.equal(pythonJsonDumps(value), '{"a": 3.0, "b": 2, "__proto__": {"polluted": true}}');
  t.equal(Object.getPrototypeOf(value), Object.prototype);
});
