import t from 'tap';
import { SecretRegistry, urlCredentialSecrets } from '../../src/log/secret-registry.js';

// The logger's registry of secrets by owner: replaced, added to, released; a value two owners hold stays until both let go.

t.test("set replaces the owner's values; release drops them", async (t) => {
  const r = new SecretRegistry();
  r.set('session-1', ['password-1', 'token-aaaa']);
  t.same([...r.forms()].sort(), ['password-1', 'token-aaaa']);
  r.set('session-1', ['password-1', 'token-bbbb']);
  t.same([...r.forms()].sort(), ['password-1', 'token-bbbb'], 'the renewed token replaced the old one');
  r.release('session-1');
  t.same(r.forms(), []);
  t.equal(r.size, 0);
  t.equal(r.ownerCount, 0);
});

t.test('every encoded form is registered; too-short values are not', async (t) => {
  const r = new SecretRegistry();
  r.set('o', ['p@ss "w/rd"', 'abc', undefined, null]);
  t.same(
    [...r.forms()].sort(),
    ['p%40ss+%22w%2Frd%22', 'p%40ss%20%22w%2Frd%22', 'p@ss "w/rd"', 'p@ss \\"w/rd\\"'].sort(),
  );
});

t.test('a value held by two owners stays until both release it', async (t) => {
  const r = new SecretRegistry();
  r.add('process', ['shared-password']);
  r.set('session-1', ['shared-password', 'token-cccc']);
  r.release('session-1');
  t.same(r.forms(), ['shared-password'], 'still held by the process');
  r.set('a', ['only-a-and-b']);
  r.set('b', ['only-a-and-b']);
  r.set('a', []);
  t.ok(r.forms().includes('only-a-and-b'));
  r.release('b');
  t.notOk(r.forms().includes('only-a-and-b'));
});

t.test('add accumulates without re-encoding what is there; the order is longest first', async (t) => {
  const r = new SecretRegistry();
  r.add('process', ['a b c d']);
  r.add('process', ['a b c d']);
  r.add('process', ['abcdefghij']);
  t.equal(r.size, 4, 'a b c d raw, URL-encoded and form-encoded (its JSON form is the raw one), abcdefghij once');
  const lengths = r.forms().map((f) => f.length);
  t.same(
    lengths,
    [...lengths].sort((x, y) => y - x),
  );
});

t.test('many owners coming and going leave only the live ones', async (t) => {
  const r = new SecretRegistry();
  for (let i = 0; i < 1000; i++) {
    r.set(`user-${i % 10}`, [`password-${i % 10}`, `token-${i}`]);
    if (i % 7 === 0) r.release(`user-${(i + 3) % 10}`);
  }
  t.ok(r.ownerCount <= 10);
  t.ok(r.size <= 20, `${r.size} forms`);
});

t.test(
  'urlCredentialSecrets: the password of a proxy URL raw, decoded and as Basic; nothing without one',
  async (t) => {
    t.same(urlCredentialSecrets('u:pa%24%24word@proxy.test:3128'), [
      'pa%24%24word',
      'pa$$word',
      Buffer.from('u:pa$$word').toString('base64'),
    ]);
    t.same(urlCredentialSecrets('http://proxy.test:3128'), []);
    t.same(urlCredentialSecrets('http://only-user@proxy.test'), []);
    t.same(urlCredentialSecrets(undefined), []);
  },
);
