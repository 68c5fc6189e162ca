import { chmodSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { DEFAULT_SEARCH_PATH, executableStatus, findExecutable, isExecutableFile } from '../../src/util/executable.js';

// The one executable check (hook lookup, run-parts, doctor, the hooks' tools) and the PATH search on it.

const asRoot = process.getuid?.() === 0;

function program(dir: string, name: string, mode = 0o755): string {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, name);
  writeFileSync(file, '#!/bin/sh\nexit 0\n');
  chmodSync(file, mode);
  return file;
}

t.test('a regular file this process may execute, links followed; anything else says why not', async (t) => {
  const dir = t.testdir({ sub: {} });
  const at = (n: string) => path.join(dir, n);
  program(dir, 'tool');
  program(dir, 'plain', 0o644);
  symlinkSync('tool', at('to-tool'));
  symlinkSync('plain', at('to-plain'));
  symlinkSync('nowhere', at('dangling'));
  symlinkSync('loop', at('loop'));
  symlinkSync('sub', at('to-sub'));

  t.same(await executableStatus(at('tool')), { kind: 'executable' });
  t.same(await executableStatus(at('to-tool')), { kind: 'executable' }, 'a link to an executable counts');
  t.same(await executableStatus(at('plain')), { kind: 'not-executable', mode: 0o644 }, 'a 0644 file, even for root');
  t.same(await executableStatus(at('to-plain')), { kind: 'not-executable', mode: 0o644 }, "the target's mode");
  t.same(await executableStatus(at('sub')), { kind: 'not-a-file' }, 'a directory, which access(X_OK) passes for root');
  t.same(await executableStatus(at('to-sub')), { kind: 'not-a-file' });
  t.same(await executableStatus(at('dangling')), { kind: 'absent' }, 'a dangling link does not exist');
  t.same(await executableStatus(at('loop')), { kind: 'absent' }, 'a link loop does not exist');
  t.same(await executableStatus(at('missing')), { kind: 'absent' });
  t.same(await executableStatus(at('tool/below')), { kind: 'absent' }, 'ENOTDIR is absent, not an error');
  t.same(await executableStatus('/dev/null'), { kind: 'not-a-file' }, 'a device');
  t.equal(await isExecutableFile(at('tool')), true);
  t.equal(await isExecutableFile(at('plain')), false);
});

t.test('execute bits: root needs any one of them; anyone else the bit of its own class', async (t) => {
  const dir = t.testdir();
  // Ours, with only "other" allowed to execute: the owner class applies to the owner, so only root may run it.
  const othersOnly = program(dir, 'others-only', 0o001);
  t.equal(await isExecutableFile(othersOnly), asRoot, asRoot ? 'root: any execute bit' : 'the owner: the owner bit');
  const ownerOnly = program(dir, 'owner-only', 0o700);
  t.equal(await isExecutableFile(ownerOnly), true);
  const none = program(dir, 'none', 0o600);
  t.equal(await isExecutableFile(none), false, 'no execute bit: not even root');
});

t.test('PATH search: in order, skipping what cannot run; empty elements skipped; "/" names the file', async (t) => {
  const dir = t.testdir();
  const a = path.join(dir, 'a');
  const b = path.join(dir, 'b');
  program(a, 'tool', 0o644);
  mkdirSync(path.join(a, 'adir'), { recursive: true });
  const later = program(b, 'tool');
  program(b, 'adir');
  t.equal(await findExecutable('tool', { PATH: `${a}:${b}` }), later, 'a 0644 file earlier in PATH is passed over');
  t.equal(await findExecutable('adir', { PATH: `${a}:${b}` }), path.join(b, 'adir'), 'so is a directory');
  t.equal(await findExecutable('tool', { PATH: a }), undefined);
  t.equal(await findExecutable('tool', { PATH: '' }), undefined, 'an empty PATH finds nothing');
  t.equal(await findExecutable('', { PATH: b }), undefined, 'an empty name never names the directory');
  t.equal(await findExecutable(later, { PATH: a }), later, 'a name with "/" is the file itself');
  t.equal(await findExecutable(path.join(a, 'tool'), { PATH: b }), undefined, 'and is not searched for');
  t.equal(await findExecutable('sh', {}), '/usr/bin/sh', `without PATH: ${DEFAULT_SEARCH_PATH}, as spawn searches`);
});

t.test('an empty PATH element is not the working directory', async (t) => {
  const dir = t.testdir();
  program(dir, 'here');
  const cwd = process.cwd();
  process.chdir(dir);
  t.teardown(() => process.chdir(cwd));
  t.equal(await findExecutable('here', { PATH: ':/nonexistent' }), undefined, 'leading empty element');
  t.equal(await findExecutable('here', { PATH: '/nonexistent::/also-not' }), undefined, 'empty element inside');
  t.equal(await findExecutable('./here', { PATH: '/nonexistent' }), './here', 'a relative name with "/" is the file');
});

t.test('any name from outside (a HEAT_*_CMD value): never throws, finds only executables', async (t) => {
  const dir = t.testdir();
  program(dir, 'tool');
  const env = { PATH: `${dir}:/nonexistent::${dir}/tool` };
  const alphabet = ['a', 't', 'o', 'l', '/', '.', '..', ':', '\0', ' ', '\n', 'é', '*', '~', 'tool', dir];
  // A fixed-seed generator: the same names every run.
  let seed = 28;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) >> 16;
  let hits = 0;
  for (let i = 0; i < 300; i++) {
    const name = Array.from({ length: 1 + (next() % 6) }, () => alphabet[next() % alphabet.length]).join('');
    const found = await findExecutable(name, env);
    if (found === undefined) continue;
    hits++;
    t.equal(await isExecutableFile(found), true, JSON.stringify(name));
  }
  t.ok(hits > 0, 'some names were found');
  t.equal(await findExecutable('tool\0', env), undefined, 'a NUL is not found, not an error');
});
