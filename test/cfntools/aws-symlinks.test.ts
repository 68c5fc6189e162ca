import { lstatSync, mkdirSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { createAwsSymlinks, isOurs, realHeatCfntools } from '../../src/cfntools/aws-symlinks.js';
import { createPathMapper } from '../../src/util/rooted-path.js';
import type { TapTest } from '../helpers/http-test-server.js';

// cfn-create-aws-symlinks under a test root: our launchers (a directory of this process), or a real heat-cfntools'
// /usr/bin/cfn-* when one is installed, linked into /opt/aws/bin; what is kept, replaced and said.

function rig(t: TapTest) {
  const dir = t.testdir();
  const root = path.join(dir, 'root');
  const own = path.join(dir, 'own');
  mkdirSync(own, { recursive: true });
  for (const name of ['cfn-init', 'cfn-hup', 'cfn-signal'])
    writeFileSync(path.join(own, name), `#!/bin/sh\n# ${name}: runs os-config-agent\n`, { mode: 0o755 });
  writeFileSync(path.join(own, 'other-tool'), 'not a cfn command');
  const lines: string[] = [];
  const at = (p: string) => path.join(root, p);
  const run = (extra: Partial<Parameters<typeof createAwsSymlinks>[0]> = {}) =>
    createAwsSymlinks({
      paths: createPathMapper(root),
      target: '/opt/aws/bin',
      force: false,
      ownDir: own,
      say: (l) => lines.push(l),
      ...extra,
    });
  const heatCfntools = () => {
    mkdirSync(at('usr/bin'), { recursive: true });
    for (const name of ['cfn-init', 'cfn-hup'])
      writeFileSync(at(`usr/bin/${name}`), '#! /usr/bin/python3\nimport heat_cfntools\n', { mode: 0o755 });
  };
  return { root, own, lines, at, run, heatCfntools };
}

t.test('ours when no heat-cfntools is installed; an existing entry kept and said so', async (t) => {
  const r = rig(t);
  t.equal(r.run(), 0);
  t.same(r.lines.slice(0, 2), [`${r.own} -> /opt/aws/bin`, `${r.own}/cfn-hup -> /opt/aws/bin/cfn-hup`]);
  t.equal(readlinkSync(r.at('opt/aws/bin/cfn-init')), `${r.own}/cfn-init`);
  t.notOk(lstatSync(r.at('opt/aws/bin/other-tool'), { throwIfNoEntry: false }), 'only cfn-* commands');
  r.lines.length = 0;
  t.equal(r.run(), 0);
  t.ok(r.lines.includes('/opt/aws/bin/cfn-init already exists, will not replace with symlink'));
});

t.test("a real heat-cfntools' commands win: our links re-pointed, others' files kept unless --force", async (t) => {
  const r = rig(t);
  r.run();
  r.heatCfntools();
  t.ok(realHeatCfntools(createPathMapper(r.root)));
  mkdirSync(r.at('opt/aws/bin'), { recursive: true });
  r.lines.length = 0;
  t.equal(r.run(), 0);
  t.equal(r.lines[0], '/usr/bin -> /opt/aws/bin');
  t.equal(readlinkSync(r.at('opt/aws/bin/cfn-init')), '/usr/bin/cfn-init', 'our link now points at heat-cfntools');
  t.equal(readlinkSync(r.at('opt/aws/bin/cfn-signal')), `${r.own}/cfn-signal`, 'heat-cfntools has none: ours stays');
  // Replaced, never written through: the link points at this machine's own /usr/bin.
  rmSync(r.at('opt/aws/bin/cfn-hup'));
  writeFileSync(r.at('opt/aws/bin/cfn-hup'), 'someone else');
  symlinkSync('/usr/bin/cfn-nothing', r.at('opt/aws/bin/cfn-dangling'));
  writeFileSync(r.at('usr/bin/cfn-dangling'), '#!/usr/bin/python3\n');
  r.run();
  t.ok(lstatSync(r.at('opt/aws/bin/cfn-hup')).isFile(), 'a file that is not ours is kept');
  t.equal(readlinkSync(r.at('opt/aws/bin/cfn-dangling')), '/usr/bin/cfn-dangling', 'a link to nothing is made again');
  t.equal(r.run({ force: true }), 0);
  t.equal(readlinkSync(r.at('opt/aws/bin/cfn-hup')), '/usr/bin/cfn-hup', '--force replaces it');
});

t.test('source and target the same, or a target that cannot be made: exit 1, as heat-cfntools', async (t) => {
  const r = rig(t);
  t.equal(r.run({ source: '/opt/aws/bin' }), 1);
  t.ok(r.lines.includes('Source and target are the same /opt/aws/bin'));
  mkdirSync(r.at('opt'), { recursive: true });
  writeFileSync(r.at('opt/aws'), 'a file where the directory should be');
  t.equal(r.run(), 1);
  t.match(r.lines.at(-1), /^Could not create target directory \/opt\/aws\/bin: /);
  t.notOk(isOurs(r.at('nothing-here')), 'a missing file is not ours');
});
