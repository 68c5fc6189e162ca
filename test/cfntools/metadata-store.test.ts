import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { readBaseline, readLocalMetadata, saveMetadata } from '../../src/cfntools/metadata-store.js';
import { createPathMapper } from '../../src/util/rooted-path.js';
import type { TapTest } from '../helpers/http-test-server.js';
import { settledWithin } from '../helpers/assertions.js';

// heat-cfntools' local copies of the metadata (src/cfntools/metadata-store.ts): last_metadata_<resource>, then
// last_metadata, then cfn-init-data.

function setup(t: TapTest) {
  const root = t.testdir();
  mkdirSync(path.join(root, 'var/cache/heat-cfntools'), { recursive: true });
  mkdirSync(path.join(root, 'var/lib/heat-cfntools'), { recursive: true });
  return { root, paths: createPathMapper(root), at: (p: string) => path.join(root, p) };
}

t.test('saved for a resource, read back in heat-cfntools order, 0600', async (t) => {
  const { paths, at } = setup(t);
  writeFileSync(at('var/lib/heat-cfntools/cfn-init-data'), '{"boot": true}');
  t.same(await readLocalMetadata(paths, 'web'), {
    text: '{"boot": true}',
    file: '/var/lib/heat-cfntools/cfn-init-data',
  });
  await saveMetadata(paths, { b: 1, 3: 'three' }, 'web');
  t.same(await readLocalMetadata(paths, 'web'), {
    text: '{"3": "three", "b": 1}',
    file: '/var/cache/heat-cfntools/last_metadata_web',
  });
  t.same(await readBaseline(paths, 'web'), { 3: 'three', b: 1 });
  t.equal(statSync(at('var/cache/heat-cfntools/last_metadata_web')).mode & 0o777, 0o600);
});

t.test('a copy that is a FIFO or a link to a device counts as no copy, and is not read', async (t) => {
  const { paths, at } = setup(t);
  execFileSync('mkfifo', [at('var/cache/heat-cfntools/last_metadata_web')]);
  symlinkSync('/dev/zero', at('var/cache/heat-cfntools/last_metadata'));
  writeFileSync(at('var/lib/heat-cfntools/cfn-init-data'), '{"boot": true}');
  // Read as before, the FIFO would wait for a writer forever and /dev/zero would fill the memory: bounded here.
  const found = await settledWithin(readLocalMetadata(paths, 'web'), 10);
  t.same(found, { text: '{"boot": true}', file: '/var/lib/heat-cfntools/cfn-init-data' }, 'the boot data instead');
  t.equal(await readBaseline(paths, 'web'), undefined, 'no baseline: a change is judged against nothing');
});

t.test(
  'a copy that already holds the metadata is not written again; one that differs, or is not 0600, is',
  async (t) => {
    const { paths, at } = setup(t);
    const own = at('var/cache/heat-cfntools/last_metadata_web');
    const shared = at('var/cache/heat-cfntools/last_metadata');
    await saveMetadata(paths, { a: 1 }, 'web');
    const before = { own: statSync(own).ino, shared: statSync(shared).ino };
    await saveMetadata(paths, { a: 1 }, 'web');
    t.same(
      { own: statSync(own).ino, shared: statSync(shared).ino },
      before,
      'the same files: nothing was renamed over',
    );
    chmodSync(shared, 0o644);
    await saveMetadata(paths, { a: 1 }, 'web');
    t.equal(statSync(own).ino, before.own, 'the copy that held it stays');
    t.not(statSync(shared).ino, before.shared, 'the one with another mode is written again');
    t.equal(statSync(shared).mode & 0o777, 0o600);
    await saveMetadata(paths, { a: 2 }, 'web');
    t.not(statSync(own).ino, before.own, 'a change is written');
    t.same(await readBaseline(paths, 'web'), { a: 2 });
    t.equal(readFileSync(shared, 'utf8'), '{"a": 2}');
  },
);
