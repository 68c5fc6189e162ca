import t from 'tap';
import { SteadyConditions } from '../../src/log/steady-conditions.js';
import { repeatedKeys } from '../helpers/log-capture.js';

t.test('a condition logs its start once and its end once, across passes', async (t) => {
  const log: string[] = [];
  const c = new SteadyConditions();
  const hold = (key: string) =>
    c.hold(
      key,
      () => log.push(`start ${key}`),
      () => log.push(`end ${key}`),
    );
  hold('a');
  hold('a');
  c.endPass();
  hold('a');
  hold('b');
  c.endPass();
  hold('b');
  c.endPass();
  c.endPass();
  t.same(log, ['start a', 'start b', 'end a', 'end b']);
});

t.test('an abandoned pass ends nothing and keeps what it saw', async (t) => {
  const log: string[] = [];
  const c = new SteadyConditions();
  const hold = (key: string) =>
    c.hold(
      key,
      () => log.push(`start ${key}`),
      () => log.push(`end ${key}`),
    );
  hold('a');
  c.endPass();
  hold('b');
  c.abandonPass();
  hold('b');
  c.endPass();
  t.same(log, ['start a', 'start b', 'end a']);
});

t.test("the test logger's guard finds top-level keys given twice, and only those", async (t) => {
  t.same(repeatedKeys('{"a":1,"b":{"a":2},"c":"\\"a\\":","a":3}'), ['a']);
  t.same(repeatedKeys('{"component":"x","msg":"m","component":"y","list":[{"msg":1}]}'), ['component']);
  t.same(repeatedKeys('{"a":[1,{"a":1}],"b":"a"}'), []);
});
