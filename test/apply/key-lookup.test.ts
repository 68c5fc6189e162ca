import t from 'tap';
import {
  booleanKeyStatus,
  checkValueType,
  extractKey,
  formatKeyValue,
  isKnownType,
  pythonStr,
  subhash,
} from '../../src/apply/key-lookup.js';
import { parsePythonJson } from '../../src/util/python-json-parse.js';

const meta = { a: { b: 'v', n: null, z: 0, f: false }, l: ['x', 'y', { k: 'deep' }], s: 'str', t: true };

t.test('extractKey walks objects and indexes lists', async (t) => {
  t.equal(extractKey(meta, 'a.b'), 'v');
  t.equal(extractKey(meta, 'l.1'), 'y');
  t.equal(extractKey(meta, 'l.-1.k'), 'deep');
  t.equal(extractKey(meta, 'l. 0 '), 'x', 'Python int() tolerates spaces');
  t.equal(extractKey(meta, 'l.9'), undefined);
  t.equal(extractKey(meta, 'l.-4'), undefined);
  t.equal(extractKey(meta, 'l.x'), undefined);
  t.equal(extractKey(meta, 'a.n'), undefined, 'null is missing');
  t.equal(extractKey(meta, 'a.z'), 0);
  t.equal(extractKey(meta, 'a.f'), false);
  t.equal(extractKey(meta, 's.0'), undefined, 'strings are not indexed');
  t.equal(extractKey(meta, 'a.__proto__'), undefined);
});

t.test('types validate the Python str() form', async (t) => {
  const ok: Array<[unknown, string]> = [
    ['abc_1', 'default'],
    ['', 'default'],
    [true, 'default'],
    [42, 'int'],
    ['42\n', 'int'],
    ['fe80::1/64', 'netaddress'],
    ['eth0.1', 'netdevice'],
    ['svc-user', 'username'],
    ['mysql://u:p@host/db?charset=utf8', 'dsn'],
    ['sqlite:///var/lib/x.db', 'dsn'],
    ['r1z1-10.0.0.1:%PORT%/sdb,r1z2-h:%PORT%/sdc', 'swiftdevices'],
    [{ k: 'v' }, 'raw'],
    [1.5, 'raw'],
  ];
  for (const [value, type] of ok)
    t.doesNotThrow(() => checkValueType(value, type), `${JSON.stringify(value)} as ${type}`);
  const bad: Array<[unknown, string, RegExp]> = [
    [{ k: 'v' }, 'default', /cannot interpret value '\{'k': 'v'\}' as type default/],
    [['a'], 'default', /'\['a'\]'/],
    [1.5, 'default', /'1.5'/],
    ['-1', 'int', /as type int/],
    ['', 'username', /as type username/],
    ['a b', 'netaddress', /as type netaddress/],
    ['x', 'bogus', /unknown type: bogus/],
  ];
  for (const [value, type, message] of bad)
    t.throws(() => checkValueType(value, type), { code: 'ERR_METADATA', message });
  t.ok(isKnownType('raw'));
  t.notOk(isKnownType('constructor'));
});

t.test('printed form and Python str()', async (t) => {
  t.equal(formatKeyValue('s'), 's');
  t.equal(formatKeyValue(5), '5');
  t.equal(formatKeyValue(true), 'true');
  t.equal(formatKeyValue(['é']), '["\\u00e9"]');
  t.equal(formatKeyValue({ a: null }), '{"a": null}');
  t.equal(pythonStr({ a: [true, null, "it's"] }), `{'a': [True, None, "it's"]}`);
  t.equal(pythonStr('raw'), 'raw');
  // An integer-like key stays where the metadata had it, as in Python's dict (JavaScript would list it first).
  const ordered = parsePythonJson('{"b": 1, "3": {"y": 2, "0": 3}}');
  t.equal(formatKeyValue(ordered), '{"b": 1, "3": {"y": 2, "0": 3}}');
  t.equal(pythonStr(ordered), `{'b': 1, '3': {'y': 2, '0': 3}}`);
});

t.test('boolean keys', async (t) => {
  t.equal(booleanKeyStatus(meta, 't'), 0);
  t.equal(booleanKeyStatus(meta, 'a.f'), 1);
  t.equal(booleanKeyStatus(meta, 's'), 255);
  t.equal(booleanKeyStatus(meta, 'nope'), 255);
  t.equal(booleanKeyStatus({ v: 'true' }, 'v'), 255);
});

t.test('subhash', async (t) => {
  t.same(subhash({ a: { b: { c: 1 } } }, 'a.b'), { c: 1 });
  t.same(subhash(meta, undefined), meta);
  t.same(subhash(meta, ''), meta);
  t.throws(() => subhash(meta, 'a.b'), {
    code: 'ERR_METADATA',
    message: "key 'a.b' does not correspond to a hash in the metadata file",
  });
  t.throws(() => subhash(meta, 'missing'), { code: 'ERR_METADATA' });
});
