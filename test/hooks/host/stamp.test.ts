import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { BUILTIN_HOOK_GROUPS } from '../../../src/hooks/registry.js';
import { readHookStamp, stampLine } from '../../../src/hooks/host/stamp.js';
import { VERSION } from '../../../src/version.js';
import { REPO } from '../../helpers/bundle.js';

// The stamp by which the agent knows its own hook files, one per built-in group (the list: test/hooks/registry.test.ts).

t.test('every built hook carries a stamp the agent reads back: its group and this version', async (t) => {
  const built = readdirSync(path.join(REPO, 'dist/hooks'))
    .filter((f) => f !== 'package.json')
    .sort();
  t.same(built, [...BUILTIN_HOOK_GROUPS].sort(), 'one file per built-in group, nothing else');
  for (const group of built) {
    const file = path.join(REPO, 'dist/hooks', group);
    t.same(readHookStamp(file), { group, version: VERSION }, group);
    const text = readFileSync(file, 'utf8');
    const [shebang, stamp] = text.split('\n');
    t.equal(shebang, '#!/usr/bin/env node');
    const body = text.slice(shebang!.length + stamp!.length + 2);
    t.equal(`${stamp}\n`, stampLine(group, VERSION, body), 'the build writes the format hook-stamp.ts reads');
  }
});

t.test('anything else has no stamp', async (t) => {
  const dir = t.testdir({ shell: '#!/bin/sh\necho {}\n', empty: '' });
  const original = readFileSync(path.join(REPO, 'dist/hooks/script'), 'utf8');
  const edit = (name: string, text: string) => {
    writeFileSync(path.join(dir, name), text);
    return path.join(dir, name);
  };
  t.equal(readHookStamp(path.join(dir, 'shell')), undefined, 'a shell hook');
  t.equal(readHookStamp(path.join(dir, 'empty')), undefined, 'an empty file');
  t.equal(readHookStamp(path.join(dir, 'missing')), undefined, 'a missing file');
  t.equal(readHookStamp(dir), undefined, 'a directory');
  t.equal(
    readHookStamp(edit('edited', `${original}\n// one more line\n`)),
    undefined,
    'a body changed after the build',
  );
  t.equal(
    readHookStamp(edit('digest', original.replace(/sha256=[0-9a-f]{4}/, 'sha256=0000'))),
    undefined,
    'a stamp changed after the build',
  );
  t.equal(
    readHookStamp(edit('no-shebang', original.slice(original.indexOf('\n') + 1))),
    undefined,
    'the stamp must be the second line',
  );
});
