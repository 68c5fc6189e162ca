import { chmodSync, chownSync, lchownSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t, { type Test } from 'tap';
import { judgePath, TrustCheck, UntrustedPathError } from '../../src/util/trust.js';

// The trust rule: what the agent runs or reads as root, and every directory and link on the way to it, is owned by
// root or the agent's user and writable by no one else. Another user is `nobody` (65534), which needs root.

const asRoot = process.getuid?.() === 0;
const NOBODY = 65534;

function tree(t: Test): string {
  const dir = t.testdir();
  chmodSync(dir, 0o755);
  return dir;
}

t.test('a plain tree is trusted; a missing path is missing, not untrusted', async (t) => {
  const dir = tree(t);
  mkdirSync(path.join(dir, 'hooks'), { mode: 0o755 });
  writeFileSync(path.join(dir, 'hooks', 'script'), '#!/bin/sh\n', { mode: 0o755 });
  t.same(judgePath(path.join(dir, 'hooks', 'script')), { kind: 'trusted' });
  t.same(judgePath(path.join(dir, 'hooks')), { kind: 'trusted' });
  t.same(judgePath(path.join(dir, 'hooks', 'nothing')), { kind: 'missing' });
  t.same(judgePath(path.join(dir, 'hooks', 'script', 'below-a-file')), { kind: 'missing' });
  t.equal(new TrustCheck().require(path.join(dir, 'hooks', 'nothing')), false);
});

t.test('writable by others: the file, or a directory on the way', async (t) => {
  const dir = tree(t);
  mkdirSync(path.join(dir, 'open'), { mode: 0o755 });
  chmodSync(path.join(dir, 'open'), 0o777);
  writeFileSync(path.join(dir, 'open', 'hook'), 'x', { mode: 0o755 });
  t.match(judgePath(path.join(dir, 'open', 'hook')), {
    kind: 'untrusted',
    at: path.join(dir, 'open'),
    problem: 'is writable by others (mode 0777)',
  });
  writeFileSync(path.join(dir, 'data'), 'x');
  chmodSync(path.join(dir, 'data'), 0o666);
  t.match(judgePath(path.join(dir, 'data')), { kind: 'untrusted', at: path.join(dir, 'data') });
  t.throws(() => new TrustCheck().require(path.join(dir, 'data')), UntrustedPathError);
  t.throws(() => new TrustCheck().require(path.join(dir, 'data')), {
    code: 'ERR_UNTRUSTED_PATH',
    message: /is not trusted: is writable by others.*chmod go-w/,
  });
});

t.test('a sticky directory open to all (/tmp) may be on the way, but is not trusted itself', async (t) => {
  const dir = tree(t);
  const tmp = path.join(dir, 'tmp');
  mkdirSync(path.join(tmp, 'mine'), { recursive: true, mode: 0o755 });
  chmodSync(tmp, 0o1777);
  writeFileSync(path.join(tmp, 'mine', 'f'), 'x');
  t.same(judgePath(path.join(tmp, 'mine', 'f')), { kind: 'trusted' });
  t.match(judgePath(tmp), { kind: 'untrusted', at: tmp, problem: /writable by others \(mode 1777\)/ });
});

t.test(
  "group-writable: only for root's group or the agent's own",
  { skip: !asRoot && 'needs root (chown)' },
  async (t) => {
    const dir = tree(t);
    const file = path.join(dir, 'f');
    writeFileSync(file, 'x');
    chmodSync(file, 0o664);
    t.same(judgePath(file), { kind: 'trusted' }, 'root:root 0664');
    chownSync(file, 0, NOBODY);
    t.match(judgePath(file), { kind: 'untrusted', problem: `is writable by group ${NOBODY} (mode 0664)` });
  },
);

t.test(
  'owned by another user: the file, a directory, a link on the way',
  { skip: !asRoot && 'needs root (chown)' },
  async (t) => {
    const dir = tree(t);
    writeFileSync(path.join(dir, 'theirs'), 'x', { mode: 0o644 });
    chownSync(path.join(dir, 'theirs'), NOBODY, NOBODY);
    t.match(judgePath(path.join(dir, 'theirs')), {
      kind: 'untrusted',
      problem: `is owned by user ${NOBODY}, not by root or the agent's user`,
    });
    mkdirSync(path.join(dir, 'home', 'bob'), { recursive: true, mode: 0o755 });
    chownSync(path.join(dir, 'home', 'bob'), NOBODY, NOBODY);
    writeFileSync(path.join(dir, 'home', 'bob', 'hook'), 'x', { mode: 0o755 });
    t.match(judgePath(path.join(dir, 'home', 'bob', 'hook')), {
      kind: 'untrusted',
      at: path.join(dir, 'home', 'bob'),
    });
    writeFileSync(path.join(dir, 'real'), 'x');
    symlinkSync(path.join(dir, 'real'), path.join(dir, 'planted'));
    lchownSync(path.join(dir, 'planted'), NOBODY, NOBODY);
    t.match(judgePath(path.join(dir, 'planted')), {
      kind: 'untrusted',
      at: path.join(dir, 'planted'),
      problem: /is a symbolic link that is owned by user 65534/,
    });
  },
);

t.test('links are followed one by one: every directory a chain passes through counts', async (t) => {
  const dir = tree(t);
  for (const d of ['a', 'b', 'c']) mkdirSync(path.join(dir, d), { mode: 0o755 });
  writeFileSync(path.join(dir, 'c', 'f'), 'x');
  symlinkSync(path.join(dir, 'c', 'f'), path.join(dir, 'b', 'l2'));
  symlinkSync('../b/l2', path.join(dir, 'a', 'l1'));
  t.same(judgePath(path.join(dir, 'a', 'l1')), { kind: 'trusted' });
  chmodSync(path.join(dir, 'b'), 0o777);
  t.match(judgePath(path.join(dir, 'a', 'l1')), { kind: 'untrusted', at: path.join(dir, 'b') }, 'the middle hop');
  chmodSync(path.join(dir, 'b'), 0o755);
  chmodSync(path.join(dir, 'c'), 0o777);
  t.match(judgePath(path.join(dir, 'a', 'l1')), { kind: 'untrusted', at: path.join(dir, 'c') }, 'the target');
  symlinkSync('loop2', path.join(dir, 'loop1'));
  symlinkSync('loop1', path.join(dir, 'loop2'));
  t.match(judgePath(path.join(dir, 'loop1')), { kind: 'untrusted', problem: /more than 40 symbolic links/ });
  symlinkSync(path.join(dir, 'nowhere'), path.join(dir, 'dangling'));
  t.same(judgePath(path.join(dir, 'dangling')), { kind: 'missing' });
});
