import t from 'tap';
import { UnsafeNameError } from '../../src/errors.js';
import { checkFileName, isSafeFileName } from '../../src/util/safe-name.js';

t.test('ordinary names pass through unchanged', async (t) => {
  for (const name of [
    'ec2',
    'heat_local',
    '10-base.json',
    'dep-oac',
    'a b',
    'ключ',
    'x'.repeat(255),
    'a..b',
    'trailing.',
  ]) {
    t.equal(checkFileName('cache key', name), name, name.slice(0, 20));
    t.ok(isSafeFileName(name));
  }
});

t.test('unsafe names are rejected with UnsafeNameError (B7)', async (t) => {
  const bad: unknown[] = [
    '',
    '.',
    '..',
    '../escaped',
    'a/b',
    '/abs',
    'a\\b',
    'nul\0byte',
    '.hidden',
    'x'.repeat(256),
    'é'.repeat(128),
    5,
    null,
    undefined,
    {},
    ['a'],
  ];
  for (const name of bad) {
    t.throws(
      () => checkFileName('deployment name', name),
      UnsafeNameError,
      JSON.stringify(name)?.slice(0, 30) ?? String(name),
    );
    t.notOk(isSafeFileName(name));
  }
});

t.test('the error says what and why, with a stable code', async (t) => {
  try {
    checkFileName('deployment name', '../escaped');
    t.fail('should throw');
  } catch (err) {
    t.ok(err instanceof UnsafeNameError);
    t.equal((err as UnsafeNameError).code, 'ERR_UNSAFE_NAME');
    t.match((err as Error).message, /^deployment name "\.\.\/escaped" cannot be used as a file name/);
  }
  t.throws(() => checkFileName('cache key', ''), {
    message: 'cache key must be a non-empty string',
    code: 'ERR_UNSAFE_NAME',
  });
  try {
    checkFileName('k', 'y'.repeat(300));
  } catch (err) {
    t.ok((err as Error).message.length < 200, 'a long name is truncated in the message');
  }
});

t.test('the 255-byte limit counts bytes, not characters', async (t) => {
  t.ok(isSafeFileName('é'.repeat(127)), '254 bytes');
  t.notOk(isSafeFileName('é'.repeat(128)), '256 bytes');
});
