import {
  chmodSync,
  chownSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import t from 'tap';
import type { KeystoneToken } from '../../src/keystone/catalog.js';
import { TokenCache, type CacheIdentity } from '../../src/keystone/token-cache.js';
import { scrubText } from '../../src/log/redact.js';
import type { TapTest } from '../helpers/http-test-server.js';
import { captureLog } from '../helpers/log-capture.js';

// The on-disk token cache with real files: what is written (content, modes), and every reason a file is not reused.

const ID: CacheIdentity = { authUrl: 'http://keystone.test:5000/', userId: 'u-1', projectId: 'p-1' };
const NOW = Date.parse('2026-01-01T00:00:00Z');
const TOKEN: KeystoneToken = {
  token: 'gAAAAAtoken-for-the-cache-test-0123456789',
  expiresAt: NOW + 3600_000,
  catalog: [
    { type: 'orchestration', endpoints: [{ interface: 'public', region: 'R1', url: 'http://heat.test/v1/p-1' }] },
  ],
};

function cacheIn(t: TapTest, ttlSeconds = 1800) {
  const dir = path.join(t.testdir(), 'var/cache/keystone');
  const captured = captureLog();
  return { dir, captured, cache: new TokenCache({ dir, ttlSeconds, marginMs: 60_000, log: captured.log }) };
}

t.test('save writes one 0600 file per key into a 0700 directory; load returns the token and catalog', async (t) => {
  const { dir, cache, captured } = cacheIn(t);
  await cache.save(ID, TOKEN, NOW);
  const file = cache.fileFor(ID);
  t.match(path.basename(file), /^token-[0-9a-f]{64}\.json$/);
  t.equal(statSync(dir).mode & 0o777, 0o700, 'directory 0700');
  t.equal(statSync(file).mode & 0o777, 0o600, 'file 0600');
  t.same(readdirSync(dir), [path.basename(file)], 'no temp file left');
  const doc = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  t.same(doc, {
    format: 1,
    auth_url: 'http://keystone.test:5000',
    user_id: 'u-1',
    project_id: 'p-1',
    stored_at: '2026-01-01T00:00:00.000Z',
    expires_at: '2026-01-01T01:00:00.000Z',
    token: TOKEN.token,
    catalog: TOKEN.catalog,
  });
  const loaded = await cache.load({ ...ID, authUrl: 'http://keystone.test:5000' }, NOW + 1000);
  t.same(
    loaded,
    { token: TOKEN, reuseUntil: NOW + 1800_000 },
    'the same key without the trailing slash; reused until cache_ttl',
  );
  t.equal(captured.lines.length, 0, 'nothing logged on the normal path');
  t.not(cache.fileFor({ ...ID, userId: 'u-2' }), file, 'another user, another file');
  t.not(cache.fileFor({ ...ID, projectId: 'p-2' }), file, 'another project, another file');
  t.not(cache.fileFor({ ...ID, authUrl: 'http://other:5000' }), file, 'another auth_url, another file');
});

t.test('a missing file is no token and no log line', async (t) => {
  const { cache, captured } = cacheIn(t);
  t.equal(await cache.load(ID, NOW), undefined);
  t.equal(captured.lines.length, 0);
});

t.test(
  'reuse stops at the safety margin before expiry or at cache_ttl, whichever comes first, with one info line',
  async (t) => {
    const { cache, captured } = cacheIn(t, 1800);
    await cache.save(ID, TOKEN, NOW);
    t.ok(await cache.load(ID, NOW + 1799_000), 'inside cache_ttl');
    t.equal(await cache.load(ID, NOW + 1800_000), undefined, 'cache_ttl reached');
    const long = cacheIn(t, 86_400);
    await long.cache.save(ID, TOKEN, NOW);
    t.same(
      (await long.cache.load(ID, NOW))?.reuseUntil,
      NOW + 3600_000 - 60_000,
      "a long ttl is bounded by the token's expiry less the margin",
    );
    t.equal(await long.cache.load(ID, NOW + 3600_000 - 60_000), undefined, 'inside the margin');
    t.same(
      [...captured.lines, ...long.captured.lines].map((l) => [l.level, l.msg]),
      [
        ['info', 'cached Keystone token expired; logging in'],
        ['info', 'cached Keystone token expired; logging in'],
      ],
    );
    const zero = cacheIn(t, 0);
    await zero.cache.save(ID, TOKEN, NOW);
    t.equal(await zero.cache.load(ID, NOW), undefined, 'cache_ttl = 0 never reuses');
  },
);

t.test('corrupt, foreign or unsafe files are ignored with one warning each, never with the token in it', async (t) => {
  const { cache, captured } = cacheIn(t);
  await cache.save(ID, TOKEN, NOW);
  const file = cache.fileFor(ID);
  const good = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  const cases: Array<[string, () => void, RegExp]> = [
    ['not JSON', () => writeFileSync(file, '{"format":1,"tok', { mode: 0o600 }), /^not JSON$/],
    ['empty', () => writeFileSync(file, '', { mode: 0o600 }), /^not JSON$/],
    ['a list', () => writeFileSync(file, '[]', { mode: 0o600 }), /unknown format/],
    [
      'another format',
      () => writeFileSync(file, JSON.stringify({ ...good, format: 2 }), { mode: 0o600 }),
      /unknown format/,
    ],
    [
      "another user's entry",
      () => writeFileSync(file, JSON.stringify({ ...good, user_id: 'someone-else' }), { mode: 0o600 }),
      /another auth_url, user or project/,
    ],
    [
      'a token with a line break',
      () => writeFileSync(file, JSON.stringify({ ...good, token: 'abc\r\nX-Evil: 1' }), { mode: 0o600 }),
      /no usable token/,
    ],
    [
      'no expiry',
      () => writeFileSync(file, JSON.stringify({ ...good, expires_at: 'soon' }), { mode: 0o600 }),
      /no readable expires_at/,
    ],
    ['no catalog', () => writeFileSync(file, JSON.stringify({ ...good, catalog: {} }), { mode: 0o600 }), /no catalog/],
    [
      'readable by others',
      () => {
        writeFileSync(file, JSON.stringify(good), { mode: 0o600 });
        chmodSync(file, 0o644);
      },
      /mode 644 gives others access/,
    ],
    [
      'a symbolic link',
      () => {
        const elsewhere = path.join(path.dirname(file), '..', 'elsewhere.json');
        writeFileSync(elsewhere, JSON.stringify(good), { mode: 0o600 });
        symlinkSync(elsewhere, `${file}.link`);
        renameSync(`${file}.link`, file);
      },
      /a symbolic link/,
    ],
  ];
  for (const [name, make, reason] of cases) {
    rmSync(file, { force: true });
    make();
    captured.lines.length = 0;
    t.equal(await cache.load(ID, NOW), undefined, name);
    t.equal(captured.lines.length, 1, `${name}: one line`);
    t.equal(captured.lines[0]?.msg, 'ignoring the cached Keystone token; logging in');
    t.equal(captured.lines[0]?.level, 'warn');
    t.match(String(captured.lines[0]?.reason), reason, name);
    t.equal(captured.lines[0]?.file, file);
  }
  t.notOk(captured.text().includes(TOKEN.token), 'the token never reaches a log line');

  rmSync(file, { force: true });
  mkdirSync(file);
  captured.lines.length = 0;
  t.equal(await cache.load(ID, NOW), undefined, 'a directory in its place');
  t.match(String(captured.lines[0]?.reason), /not a regular file/);
});

t.test(
  'a file owned by another user is not trusted (its catalog would decide where the token goes)',
  { skip: process.getuid?.() === 0 ? false : 'needs root to chown' },
  async (t) => {
    const { cache, captured } = cacheIn(t);
    await cache.save(ID, TOKEN, NOW);
    chownSync(cache.fileFor(ID), 65534, 65534);
    t.equal(await cache.load(ID, NOW), undefined);
    t.match(String(captured.lines[0]?.reason), /^owned by uid 65534, not 0$/);
  },
);

t.test('the next save replaces an ignored file', async (t) => {
  const { cache } = cacheIn(t);
  await cache.save(ID, TOKEN, NOW);
  writeFileSync(cache.fileFor(ID), 'garbage', { mode: 0o600 });
  t.equal(await cache.load(ID, NOW), undefined);
  await cache.save(ID, { ...TOKEN, token: 'gAAAAAreplacement-token-000000' }, NOW);
  t.equal((await cache.load(ID, NOW))?.token.token, 'gAAAAAreplacement-token-000000');
});

t.test('a token read back is a registered secret (a restarted process never logged in to learn it)', async (t) => {
  const { cache } = cacheIn(t);
  const token = { ...TOKEN, token: `gAAAAAread-back-${process.pid}-${Date.now()}` };
  await cache.save(ID, token, NOW);
  t.equal(scrubText(`x ${token.token}`), `x ${token.token}`, 'not known before it is read');
  t.ok(await cache.load(ID, NOW));
  t.equal(scrubText(`x ${token.token}`), 'x [REDACTED]');
});

t.test('write and remove failures are logged, not thrown', async (t) => {
  const base = t.testdir({ blocker: 'a file where the directory should be' });
  const captured = captureLog();
  const cache = new TokenCache({
    dir: path.join(base, 'blocker', 'keystone'),
    ttlSeconds: 1800,
    marginMs: 60_000,
    log: captured.log,
  });
  await cache.save(ID, TOKEN, NOW);
  t.same(
    captured.lines.map((l) => [l.level, l.msg, l.reason]),
    [['warn', 'cannot write the Keystone token cache; the token is kept in memory only', 'ENOTDIR']],
  );
  t.notOk(captured.text().includes(TOKEN.token));
  await cache.remove(ID);
  t.equal(captured.lines.length, 2);
  t.equal(captured.lines[1]?.msg, 'cannot remove a refused token from the Keystone token cache');
});

t.test('remove deletes the file; removing a missing one is quiet', async (t) => {
  const { cache, captured } = cacheIn(t);
  await cache.save(ID, TOKEN, NOW);
  await cache.remove(ID);
  t.equal(await cache.load(ID, NOW), undefined);
  await cache.remove(ID);
  t.equal(captured.lines.length, 0);
});
