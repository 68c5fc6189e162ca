import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { syncTarballSource, tarballRoot } from '../../../src/hooks/chef/tarball-source.js';
import type { TarballSourceSpec } from '../../../src/hooks/chef/source-options.js';
import { startTestServer } from '../../helpers/http-test-server.js';
import { hookContext } from './hook-context.js';

// The tarball source from a real HTTP server on loopback: unpacked with GNU tar, checked against its SHA-256, used
// again without a download when the checksum says it is the same archive, and refused with the cause named.

/** A .tar.gz of one cookbook under a top-level directory, as Supermarket and GitHub tarballs are made. */
function cookbookTarball(dir: string, recipe: string): Buffer {
  const src = path.join(dir, `src-${recipe}`);
  mkdirSync(path.join(src, 'webapp/recipes'), { recursive: true });
  writeFileSync(path.join(src, 'webapp/metadata.rb'), "name 'webapp'\n");
  writeFileSync(path.join(src, 'webapp/recipes/default.rb'), `log "${recipe}"\n`);
  return execFileSync('tar', ['-cz', '-C', src, 'webapp']);
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

t.test('a tarball is downloaded, checked and unpacked; with a checksum it is not downloaded again', async (t) => {
  const dir = t.testdir();
  let archive = cookbookTarball(dir, 'one');
  const server = await startTestServer((req, res) => {
    if (req.url?.startsWith('/webapp.tgz')) res.end(archive);
    else res.writeHead(404).end('no');
  });
  t.teardown(() => server.close());
  const target = path.join(dir, 'sources/tarball-webapp');
  const spec = (sha256?: string, url = `${server.url}/webapp.tgz?temp_url_sig=sig-SECRET-77&temp_url_expires=1`) =>
    ({ kind: 'tarball', label: 'kitchen_sources[0]', url, dir: target, ...(sha256 ? { sha256 } : {}) }) as const;
  const ctx = hookContext();

  await syncTarballSource(ctx, spec(sha(archive)));
  const root = await tarballRoot(target);
  t.equal(root, path.join(target, 'webapp'), 'the one top-level directory is the source');
  t.equal(readFileSync(path.join(root, 'recipes/default.rb'), 'utf8'), 'log "one"\n');
  t.same(readdirSync(path.dirname(target)).sort(), ['tarball-webapp', 'tarball-webapp.sha256'], 'no download left');
  t.equal(server.requests.length, 1);

  await syncTarballSource(ctx, spec(sha(archive)));
  t.equal(server.requests.length, 1, 'the same checksum: the unpacked copy is used again');

  archive = cookbookTarball(dir, 'two');
  const mismatch = await syncTarballSource(ctx, spec('0'.repeat(64))).then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  t.match(
    mismatch?.message,
    new RegExp(
      `^kitchen_sources\\[0\\]: the tarball .* has SHA-256 ${sha(archive)}, not the 0{64} the deployment gives: not unpacked$`,
    ),
  );
  t.equal(readFileSync(path.join(root, 'recipes/default.rb'), 'utf8'), 'log "one"\n', 'the last good copy is kept');

  await syncTarballSource(ctx, spec());
  t.equal(readFileSync(path.join(root, 'recipes/default.rb'), 'utf8'), 'log "two"\n', 'no checksum: downloaded again');
  t.notOk(existsSync(`${target}.sha256`), 'and no checksum is recorded for it');

  const notFound = await syncTarballSource(ctx, spec(undefined, `${server.url}/missing.tgz`)).then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  t.match(
    notFound?.message,
    /^kitchen_sources\[0\]: could not download http:\/\/127\.0\.0\.1:\d+\/missing\.tgz: the server answered HTTP 404$/,
  );

  for (const text of [ctx.logText(), mismatch?.message ?? ''])
    t.notOk(text.includes('sig-SECRET-77'), 'the signed URL is shown without its signature');
});

t.test('something that is not a tarball fails naming the source', async (t) => {
  const dir = t.testdir();
  const server = await startTestServer((_req, res) => {
    res.end('<html>not a tarball</html>');
  });
  t.teardown(() => server.close());
  const target = path.join(dir, 'sources/x');
  const err = await syncTarballSource(hookContext(), {
    kind: 'tarball',
    label: 'kitchen_sources[1]',
    url: `${server.url}/x.tgz`,
    dir: target,
  } satisfies TarballSourceSpec).then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  t.match(
    err?.message,
    /^kitchen_sources\[1\]: http:\/\/127\.0\.0\.1:\d+\/x\.tgz could not be unpacked as a tarball \(tar exited with status 2\):\n/,
  );
  t.same(readdirSync(path.dirname(target)), [], 'nothing is left of it');
});
