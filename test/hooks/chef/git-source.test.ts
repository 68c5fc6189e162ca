import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { HookFailure } from '../../../src/hooks/contract.js';
import { syncGitSource } from '../../../src/hooks/chef/git-source.js';
import type { GitSourceSpec } from '../../../src/hooks/chef/source-options.js';
import { freePort, git, makeRepos, startGitDaemon } from '../../helpers/git-servers.js';
import { hookContext } from './hook-context.js';

// The git source against a real `git daemon` on loopback: a ref of each kind, the checkout kept and brought to the
// next ref, unknown refs and unreachable servers failing with the cause named, and nothing of the agent's own git
// environment or configuration reaching git.

const source = (url: string, dir: string, ref?: string): GitSourceSpec => ({
  kind: 'git',
  label: 'kitchen',
  url,
  ...(ref ? { ref } : {}),
  credentials: { tokenUser: 'x-access-token' },
  dir,
});
const recipe = (dir: string) => readFileSync(path.join(dir, 'cookbooks/app/recipes/default.rb'), 'utf8');

t.test('git daemon: the default branch, a branch, a tag and commits; one checkout kept and moved', async (t) => {
  const dir = t.testdir();
  const repos = makeRepos(dir);
  const daemon = await startGitDaemon(t, repos.base);
  const working = path.join(dir, 'working');
  const kitchen = path.join(working, 'kitchen');
  const ctx = hookContext();
  const url = daemon.url('kitchen.git');

  const head = await syncGitSource(ctx, source(url, kitchen), working);
  t.equal(recipe(kitchen), 'log "main"\n', 'no ref: the default branch');
  t.equal(head, git(repos.kitchen, 'rev-parse', 'main').trim(), 'returns the commit checked out');
  t.equal(git(kitchen, 'rev-parse', '--is-shallow-repository').trim(), 'true', 'fetched shallow');
  t.notOk(existsSync(`${kitchen}.partial`), 'the first clone was moved into place');

  // A marker inside .git shows the same clone is used again rather than made afresh.
  writeFileSync(path.join(kitchen, '.git', 'marker'), 'same clone');
  writeFileSync(path.join(kitchen, 'left-by-a-recipe'), 'x');
  await syncGitSource(ctx, source(url, kitchen, 'feature'), working);
  t.equal(recipe(kitchen), 'log "feature"\n', 'a branch');
  t.ok(existsSync(path.join(kitchen, '.git', 'marker')), 'the cached clone is reused');
  t.notOk(existsSync(path.join(kitchen, 'left-by-a-recipe')), 'what the ref does not hold is removed');

  await syncGitSource(ctx, source(url, kitchen, 'v1'), working);
  t.equal(recipe(kitchen), 'log "tagged"\n', 'an annotated tag');

  // git daemon does not hand out commits by id: the source falls back to a full fetch to find them.
  await syncGitSource(ctx, source(url, kitchen, repos.firstCommit), working);
  t.equal(recipe(kitchen), 'log "first"\n', 'a full commit id');
  await syncGitSource(ctx, source(url, kitchen, 'feature'), working);
  await syncGitSource(ctx, source(url, kitchen, repos.firstCommit.slice(0, 10)), working);
  t.equal(recipe(kitchen), 'log "first"\n', 'an abbreviated commit id');
  t.ok(existsSync(path.join(kitchen, '.git', 'marker')), 'still the same clone');
  t.match(ctx.logText(), /running tool command=git fetch --quiet --depth 1 --no-tags origin -- feature/);
});

t.test('git daemon: an unknown ref or an unreachable server fails naming it; the last checkout stays', async (t) => {
  const dir = t.testdir();
  const repos = makeRepos(dir);
  const daemon = await startGitDaemon(t, repos.base);
  const working = path.join(dir, 'working');
  const kitchen = path.join(working, 'kitchen');
  const ctx = hookContext();
  const url = daemon.url('kitchen.git');
  await syncGitSource(ctx, source(url, kitchen, 'v1'), working);

  for (const ref of ['no-such-branch', 'deadbeefdeadbeef']) {
    const err = await syncGitSource(ctx, source(url, kitchen, ref), working).catch((e: unknown) => e);
    t.type(err, HookFailure, ref);
    t.match((err as Error).message, `kitchen: the ref "${ref}" was not found in ${url}: give a branch, tag or commit`);
    t.equal(recipe(kitchen), 'log "tagged"\n', 'the last good checkout is kept');
  }

  const missing = await syncGitSource(ctx, source(daemon.url('nothing.git'), kitchen), working).catch((e) => e);
  t.match((missing as Error).message, /^kitchen: could not fetch git:\/\/127\.0\.0\.1:\d+\/nothing\.git \(git exited/);
  t.equal(recipe(kitchen), 'log "tagged"\n');

  const closed = `git://127.0.0.1:${await freePort()}/kitchen.git`;
  const fresh = path.join(working, 'fresh');
  const refused = await syncGitSource(ctx, source(closed, fresh), working).catch((e: unknown) => e);
  t.match(
    (refused as Error).message,
    /^kitchen: could not fetch .* \(git exited with status 128\):\n.*unable to connect/s,
  );
  t.notOk(existsSync(fresh), 'a failed first clone leaves nothing');
  t.notOk(existsSync(`${fresh}.partial`));
});

t.test("git's environment and configuration of the agent's user do not reach git", async (t) => {
  const dir = t.testdir();
  const repos = makeRepos(dir);
  const daemon = await startGitDaemon(t, repos.base);
  const home = path.join(dir, 'home');
  mkdirSync(home);
  // A user configuration that would send the fetch elsewhere, and variables that would do the same.
  writeFileSync(
    path.join(home, '.gitconfig'),
    `[url "${daemon.url('webapp-cookbook.git')}"]\n\tinsteadOf = ${daemon.url('kitchen.git')}\n`,
  );
  const trap = path.join(dir, 'trap');
  writeFileSync(trap, `#!/bin/sh\ntouch ${dir}/trapped\nexit 1\n`, { mode: 0o755 });
  const ctx = hookContext({
    HOME: home,
    GIT_DIR: path.join(dir, 'elsewhere'),
    GIT_SSH_COMMAND: trap,
    GIT_ASKPASS: trap,
    GIT_CONFIG_COUNT: '1',
    GIT_CONFIG_KEY_0: 'core.fsmonitor',
    GIT_CONFIG_VALUE_0: trap,
  });
  const working = path.join(dir, 'working');
  const kitchen = path.join(working, 'kitchen');
  await syncGitSource(ctx, source(daemon.url('kitchen.git'), kitchen), working);
  t.equal(recipe(kitchen), 'log "main"\n', 'fetched from the URL given, not the one the user configuration names');
  t.notOk(existsSync(path.join(dir, 'trapped')), "none of the agent's GIT_* variables was used");
  t.notOk(existsSync(path.join(dir, 'elsewhere')));
});

t.test('a non-empty directory that is not a clone is left alone', async (t) => {
  const dir = t.testdir({ kitchen: { precious: 'keep' } });
  const err = await syncGitSource(
    hookContext(),
    source('git://127.0.0.1:1/x.git', path.join(dir, 'kitchen')),
    dir,
  ).catch((e: unknown) => e);
  t.match((err as Error).message, /is a non-empty directory that is not a git clone: not replacing it/);
  t.equal(readFileSync(path.join(dir, 'kitchen/precious'), 'utf8'), 'keep');
});
