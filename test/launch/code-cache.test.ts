import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { REPO } from '../helpers/bundle.js';

// V8's code cache of one CommonJS file (src/launch/code-cache.ts), used by heat-cfntools' commands on a Node.js
// without its own compile cache. Each load runs in a process of its own, since the cache is written as it exits.

const codeCache = new URL('../../src/launch/code-cache.ts', import.meta.url).pathname;
const tsLoader = process.execArgv.filter((a) => a.includes('@tapjs/typescript'));

/** Loads `file` with the cache in `cache` in a new process; what its exports say, and the process's stderr. */
function load(file: string, cache: string): { said: string; stderr: string; status: number | null } {
  const script = `
    import { requireWithCodeCache } from ${JSON.stringify(codeCache)};
    const exported = requireWithCodeCache(${JSON.stringify(file)}, ${JSON.stringify(cache)});
    process.stdout.write(exported.say());`;
  const r = spawnSync(process.execPath, [...tsLoader, '--input-type=module', '-e', script], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { said: r.stdout, stderr: r.stderr, status: r.status };
}

const cjs = (word: string) =>
  `'use strict';\nconst path = require('node:path');\nmodule.exports.say = () => ${JSON.stringify(word)} + path.sep;\n`;

t.test('the first load writes the cache as the process ends; later loads read it and write nothing', async (t) => {
  const dir = t.testdir({ 'main.cjs': cjs('first'), cache: {} });
  const cache = path.join(dir, 'cache');
  const first = load(path.join(dir, 'main.cjs'), cache);
  t.same(first, { said: 'first/', stderr: '', status: 0 }, 'exports, and require() of a builtin, as require() gives');
  const files = readdirSync(cache);
  t.equal(files.length, 1);
  t.match(files[0], new RegExp(`^code-${process.version}-${process.arch}-[0-9a-f]{32}\\.bin$`));
  const written = statSync(path.join(cache, files[0]!));
  t.ok(written.size > 0);
  const again = load(path.join(dir, 'main.cjs'), cache);
  t.same(again, first);
  const after = statSync(path.join(cache, files[0]!));
  t.same([after.ino, after.mtimeMs], [written.ino, written.mtimeMs], 'the cache was read, not written again');
});

t.test('a new source of the same length is compiled from itself, never run from the old cache', async (t) => {
  // V8 checks a code cache against the source's length only: the name of the cache file carries the content's hash.
  const dir = t.testdir({ 'main.cjs': cjs('aaaa'), cache: {} });
  const cache = path.join(dir, 'cache');
  t.equal(load(path.join(dir, 'main.cjs'), cache).said, 'aaaa/');
  const [old] = readdirSync(cache);
  writeFileSync(path.join(dir, 'main.cjs'), cjs('bbbb'));
  writeFileSync(path.join(cache, 'unrelated.bin'), 'kept');
  t.equal(load(path.join(dir, 'main.cjs'), cache).said, 'bbbb/');
  const now = readdirSync(cache);
  t.equal(now.length, 2);
  t.notOk(now.includes(old!), 'the cache of the old source is removed when the new one is written');
  t.ok(now.includes('unrelated.bin'), 'files not of this cache are left alone');
});

t.test('a damaged cache file is rejected by V8 and replaced; a cache that cannot be written is no error', async (t) => {
  const dir = t.testdir({ 'main.cjs': cjs('whole'), cache: {} });
  const cache = path.join(dir, 'cache');
  load(path.join(dir, 'main.cjs'), cache);
  const [name] = readdirSync(cache);
  const cacheFile = path.join(cache, name!);
  const damaged = Buffer.alloc(readFileSync(cacheFile).length, 7);
  writeFileSync(cacheFile, damaged);
  t.same(load(path.join(dir, 'main.cjs'), cache), { said: 'whole/', stderr: '', status: 0 });
  const rewritten = readFileSync(cacheFile);
  t.ok(rewritten.length > 0 && !rewritten.equals(damaged), 'written again from the compiled file');
  t.same(load(path.join(dir, 'main.cjs'), path.join(dir, 'no/such/dir')), {
    said: 'whole/',
    stderr: '',
    status: 0,
  });
});

t.test("heat-cfntools' built commands keep their file's code cache, on every Node.js", async (t) => {
  const dir = t.testdir({ cache: {}, off: {} });
  // tap's loader hooks (NODE_OPTIONS) cannot load the extensionless launchers: started through env(1) without them.
  const command = (cache: string, ...env: string[]) =>
    spawnSync(
      '/usr/bin/env',
      [
        '-u',
        'NODE_OPTIONS',
        '-u',
        'NODE_DISABLE_COMPILE_CACHE',
        `OS_CONFIG_AGENT_COMPILE_CACHE=${cache}`,
        ...env,
        process.execPath,
        path.join(REPO, 'dist/bin/cfn-get-metadata'),
        '--help',
      ],
      { encoding: 'utf8', timeout: 60_000 },
    );
  const cache = path.join(dir, 'cache');
  const first = command(cache);
  t.equal(first.status, 0, first.stderr);
  t.match(first.stdout, /cfn-get-metadata/);
  const files = readdirSync(cache);
  t.equal(files.length, 1, "the commands' file cached, and nothing of Node's own cache");
  t.match(files[0], /^code-.*\.bin$/);
  const second = command(cache);
  t.same([second.status, second.stdout, second.stderr], [first.status, first.stdout, first.stderr]);
  const off = command(path.join(dir, 'off'), 'NODE_DISABLE_COMPILE_CACHE=1');
  t.same([off.status, off.stdout], [first.status, first.stdout]);
  t.same(readdirSync(path.join(dir, 'off')), [], "NODE_DISABLE_COMPILE_CACHE=1, Node's switch, turns it off too");
});
