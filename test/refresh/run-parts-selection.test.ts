import { spawnSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import {
  compareBytes,
  compareRunParts,
  runPartsFilter,
  selectRunParts,
} from '../../src/refresh/run-parts-selection.js';
import { isExecutableFile } from '../../src/util/executable.js';
import { writeScript } from './phase-fixtures.js';

const TRICKY = [
  'zzz',
  '2-b',
  '09_c',
  '010-lead',
  '10-A',
  '10-a',
  '-5x',
  '-0a',
  '_x',
  '0',
  '00',
  '1e',
  '-',
  '-x',
  '100',
  '99',
  '2',
];

t.test('order is LANG=C sort -n: leading number, unnumbered first, ties by bytes', async (t) => {
  t.same([...TRICKY].sort(compareRunParts), [
    '-5x',
    '-',
    '-0a',
    '-x',
    '0',
    '00',
    '_x',
    'zzz',
    '1e',
    '2',
    '2-b',
    '09_c',
    '010-lead',
    '10-A',
    '10-a',
    '99',
    '100',
  ]);
  // The real sort(1) agrees.
  const sorted = spawnSync('sort', ['-n'], {
    input: `${TRICKY.join('\n')}\n`,
    env: { ...process.env, LANG: 'C', LC_ALL: 'C' },
    encoding: 'utf8',
  });
  t.same([...TRICKY].sort(compareRunParts), sorted.stdout.trim().split('\n'));
});

t.test('decimal and negative keys sort numerically', async (t) => {
  const names = ['2.10x', '2.5x', '2.05', '-1.5', '-1.25', '.5', '3'];
  const sorted = spawnSync('sort', ['-n'], {
    input: `${names.join('\n')}\n`,
    env: { ...process.env, LANG: 'C', LC_ALL: 'C' },
    encoding: 'utf8',
  });
  t.same([...names].sort(compareRunParts), sorted.stdout.trim().split('\n'));
  t.equal(compareRunParts('1', '1'), 0);
  t.ok(compareBytes('10-b', '9-a') < 0, 'environment.d order is byte order');
});

t.test('filter: default pattern, RUN_PARTS_REGEX, POSIX classes, invalid regex', async (t) => {
  const def = runPartsFilter(undefined);
  for (const ok of ['10-a', 'foo_bar', 'X', '-']) t.ok(def(ok), ok);
  for (const bad of ['foo.sh', 'foo.bak', 'foo~', 'a b', '', '.hidden', 'ü']) t.notOk(def(bad), bad);
  t.ok(runPartsFilter('')('abc'), 'empty means the default');
  const sh = runPartsFilter('\\.sh$');
  t.ok(sh('x.sh'));
  t.notOk(sh('x'));
  const cls = runPartsFilter('^[[:digit:]]+-[[:alpha:]]+$');
  t.ok(cls('10-abc'));
  t.notOk(cls('abc'));
  t.notOk(runPartsFilter('([')('anything'), 'an invalid regex selects nothing');
});

t.test('selection: executable regular files (and links to them), valid names only, in order', async (t) => {
  const dir = t.testdir({});
  for (const name of ['20-b', '10-a', 'foo.sh', 'foo.bak', 'foo~', 'zz', 'with.dot'])
    writeScript(path.join(dir, name), '#!/bin/sh\n');
  writeScript(path.join(dir, '15-noexec'), '#!/bin/sh\n', 0o644);
  mkdirSync(path.join(dir, '30-subdir'));
  writeScript(path.join(dir, '..', 'target'), '#!/bin/sh\n');
  symlinkSync(path.join(dir, '..', 'target'), path.join(dir, '40-link'));
  symlinkSync(path.join(dir, 'missing'), path.join(dir, '50-dangling'));
  t.same(await selectRunParts(dir), ['zz', '10-a', '20-b', '40-link']);
  t.same(await selectRunParts(dir, runPartsFilter('\\.')), ['foo.bak', 'foo.sh', 'with.dot']);
  t.same(await selectRunParts(path.join(dir, 'nope')), []);
  t.equal(await isExecutableFile(path.join(dir, '15-noexec')), false);
  t.equal(await isExecutableFile(path.join(dir, '30-subdir')), false);
});

t.test(
  'selection agrees with dib-run-parts --list',
  { skip: spawnSync('dib-run-parts', ['--help']).error ? 'dib-run-parts not installed' : false },
  async (t) => {
    const dir = t.testdir({});
    for (const name of TRICKY) writeScript(path.join(dir, name), '#!/bin/sh\n');
    writeScript(path.join(dir, '5-skip.sh'), '#!/bin/sh\n');
    writeFileSync(path.join(dir, '6-plain'), 'not executable');
    const listed = spawnSync('dib-run-parts', ['--list', dir], {
      encoding: 'utf8',
      env: { ...process.env, LC_ALL: 'C' },
    });
    t.equal(listed.status, 0);
    t.same(
      (await selectRunParts(dir)).map((n) => `${dir}/${n}`),
      listed.stdout.trim().split('\n'),
    );
  },
);
