import t from 'tap';
import {
  cfnBody,
  nativeBody,
  nativeBodyFromJson,
  SignalInputError,
  statusFrom,
} from '../../src/heat/wait-condition-body.js';

// cfn-signal's status rule and body bytes, and the native body checks Heat would apply.

t.test('status: a non-empty exit code decides, else -s must be exactly "true"', async (t) => {
  const cases: Array<[Parameters<typeof statusFrom>[0], string]> = [
    [{}, 'SUCCESS'],
    [{ success: 'true' }, 'SUCCESS'],
    [{ success: 'false' }, 'FAILURE'],
    [{ success: 'yes' }, 'FAILURE'],
    [{ success: 'TRUE' }, 'FAILURE'],
    [{ exitCode: '0', success: 'false' }, 'SUCCESS'],
    [{ exitCode: '1', success: 'true' }, 'FAILURE'],
    [{ exitCode: '00' }, 'FAILURE'],
    [{ exitCode: '', success: 'false' }, 'FAILURE'],
    [{ exitCode: '', success: 'true' }, 'SUCCESS'],
  ];
  for (const [flags, status] of cases) t.equal(statusFrom(flags), status, JSON.stringify(flags));
});

t.test("bodies: json.dumps's key order, separators and ASCII escapes", async (t) => {
  const f = { status: 'FAILURE' as const, reason: 'r\n"q"', data: 'é😀', uniqueId: 'i-1' };
  t.equal(
    cfnBody(f),
    '{"Status": "FAILURE", "Reason": "r\\n\\"q\\"", "UniqueId": "i-1", "Data": "\\u00e9\\ud83d\\ude00"}',
  );
  t.equal(
    nativeBody(f),
    '{"status": "FAILURE", "reason": "r\\n\\"q\\"", "data": "\\u00e9\\ud83d\\ude00", "id": "i-1"}',
  );
  t.throws(() => cfnBody({ ...f, data: 'x'.repeat(950_000) }), {
    name: 'SignalInputError',
    code: 'ERR_SIGNAL',
    message: /over the 950000-byte limit/,
  });
});

t.test("native body given whole: an object with only Heat's keys and a valid status", async (t) => {
  t.equal(
    nativeBodyFromJson('{"status":"SUCCESS","data":{"k":[1,2]}}'),
    '{"status": "SUCCESS", "data": {"k": [1, 2]}}',
    'kept, re-serialised',
  );
  t.equal(nativeBodyFromJson('{}'), '{}', 'Heat fills in the defaults');
  for (const bad of [
    '',
    'SUCCESS',
    '"SUCCESS"',
    '[1]',
    'null',
    '{"status": "success"}',
    '{"status": 1}',
    '{"Status": "SUCCESS"}',
    '{"status": "SUCCESS", "x": 1}',
  ]) {
    t.throws(() => nativeBodyFromJson(bad), SignalInputError, JSON.stringify(bad));
  }
});
