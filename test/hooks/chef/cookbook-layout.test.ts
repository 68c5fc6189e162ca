import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { readLayout } from '../../../src/hooks/chef/cookbook-layout.js';
import { settledWithin } from '../../helpers/assertions.js';

// What a fetched chef source holds (src/hooks/chef/cookbook-layout.ts), read from its top directory. The source comes
// from the network, so its metadata files are read only as regular files.

t.test('a cookbook is named by metadata.json, else by metadata.rb; a kitchen by what it holds', async (t) => {
  const dir = t.testdir({
    json: { 'metadata.json': '{"name": "nginx", "version": "1.0.0"}', 'metadata.rb': "name 'ignored'\n" },
    rb: { 'metadata.rb': "# comment\nname 'app_server'\nversion '2.0'\n", Berksfile: '' },
    kitchen: { cookbooks: {}, 'Policyfile.rb': '' },
  });
  t.same(await readLayout(path.join(dir, 'json'), 'source'), {
    dir: path.join(dir, 'json'),
    policyfile: false,
    berksfile: false,
    cookbook: 'nginx',
    cookbooks: false,
  });
  t.equal((await readLayout(path.join(dir, 'rb'), 'source')).cookbook, 'app_server');
  t.match(await readLayout(path.join(dir, 'kitchen'), 'source'), { policyfile: true, cookbooks: true });
  t.notOk('cookbook' in (await readLayout(path.join(dir, 'kitchen'), 'source')));
});

t.test('metadata that is a FIFO, a link to a device or not JSON fails, naming the file', async (t) => {
  const dir = t.testdir({ fifo: {}, zero: {}, bad: { 'metadata.json': '{"name": ' } });
  execFileSync('mkfifo', [path.join(dir, 'fifo/metadata.rb')]);
  symlinkSync('/dev/zero', path.join(dir, 'zero/metadata.json'));
  for (const [name, expected] of [
    ['fifo', /^kitchen_sources\[1\]: the cookbook's metadata\.rb cannot be read: not a regular file$/],
    ['zero', /^kitchen_sources\[1\]: the cookbook's metadata\.json cannot be read: not a regular file$/],
    ['bad', /^kitchen_sources\[1\]: metadata\.json is not JSON/],
  ] as const) {
    // Read as before, the FIFO would wait for a writer forever and /dev/zero would fill the memory: bounded here.
    const err = await settledWithin(readLayout(path.join(dir, name), 'kitchen_sources[1]'), 10);
    t.match(String((err as Error).message), expected, name);
  }
  mkdirSync(path.join(dir, 'big'));
  writeFileSync(path.join(dir, 'big/metadata.rb'), `name 'big'\n${'#'.repeat(1024 * 1024)}\n`);
  await t.rejects(
    readLayout(path.join(dir, 'big'), 'source'),
    /metadata\.rb cannot be read: .*over the 1048576-byte limit/,
  );
});
