import { readdir, rename, rmdir } from 'node:fs/promises';
import path from 'node:path';
import { redactUrl } from '../../log/redact.js';
import { HookFailure, type HookContext } from '../contract.js';
import { runTool, type ToolOutcome } from '../kit/run-tool.js';
import { makeDirs, removeFiles } from '../kit/work-files.js';
import { openGitAccess } from './git-access.js';
import { GIT } from './tools.js';
import type { GitSourceSpec } from './source-options.js';

// The message the hook has always given when git is missing (scripts match it).
const gitMissing = (env: NodeJS.ProcessEnv) =>
  `git is not installed (PATH=${env.PATH ?? ''}): install the ${GIT.name} package, which the chef hook needs to fetch the kitchen's repositories.`;

// A git source checked out at its ref. The checkout is kept and brought to the requested ref on the next run (one
// shallow fetch of that ref) instead of cloned afresh; a first clone is made beside its place and moved in only once
// it is complete, and a failed fetch leaves the last good checkout as it was. Branches and tags are fetched shallow; a
// commit the server will not hand out by itself (git daemon and older servers) is found in a full fetch.

/** Brings the source's directory to its ref; returns the commit checked out. */
export async function syncGitSource(ctx: HookContext, source: GitSourceSpec, working: string): Promise<string> {
  const existing = await entries(source.dir);
  if (existing.length > 0 && !existing.includes('.git'))
    throw new HookFailure(
      `${source.label}: ${source.dir} is a non-empty directory that is not a git clone: not replacing it with the kitchen; point kitchen_path at a new directory or remove it`,
    );
  const access = await openGitAccess(ctx, source, working);
  try {
    const git = (cwd: string, ...args: string[]) =>
      runTool(ctx, { file: 'git', args, cwd, env: access.env }, gitMissing(access.env));
    if (existing.length > 0) {
      await must(source, await git(source.dir, 'remote', 'set-url', 'origin', '--', source.url), 'set the remote of');
      return await checkout(source, source.dir, git);
    }
    // A first clone: made in a directory of its own and moved into place once it is checked out.
    const partial = `${source.dir}.partial`;
    await removeFiles(partial);
    await makeDirs(path.dirname(source.dir));
    try {
      await must(source, await git(path.dirname(source.dir), 'init', '--quiet', '--', partial), 'create a clone of');
      await must(source, await git(partial, 'remote', 'add', 'origin', '--', source.url), 'set the remote of');
      const commit = await checkout(source, partial, git);
      await rmdir(source.dir).catch(() => undefined); // an empty directory made in advance
      await rename(partial, source.dir);
      return commit;
    } finally {
      await removeFiles(partial);
    }
  } finally {
    await access.close();
  }
}

type Git = (cwd: string, ...args: string[]) => Promise<ToolOutcome>;

async function checkout(source: GitSourceSpec, dir: string, git: Git): Promise<string> {
  const wanted = source.ref ?? 'HEAD';
  const shallow = await git(dir, 'fetch', '--quiet', '--depth', '1', '--no-tags', 'origin', '--', wanted);
  let target = 'FETCH_HEAD';
  if (shallow.status !== 0) {
    const notFound = /couldn't find remote ref|not our ref|unadvertised object/i.test(shallow.stderr);
    if (!notFound || !source.ref || !/^[0-9a-f]{7,40}$/i.test(source.ref))
      throw fetchFailure(source, shallow, notFound);
    // Perhaps a commit: fetch everything (the whole history, every branch and tag) and look for it.
    const unshallow = (await entries(path.join(dir, '.git'))).includes('shallow') ? ['--unshallow'] : [];
    const full = await git(
      dir,
      'fetch',
      '--quiet',
      '--tags',
      ...unshallow,
      'origin',
      '+refs/heads/*:refs/remotes/origin/*',
    );
    if (full.status !== 0) throw fetchFailure(source, full, false);
    const found = await git(dir, 'rev-parse', '--verify', '--quiet', '--end-of-options', `${source.ref}^{commit}`);
    if (found.status !== 0) throw fetchFailure(source, shallow, true);
    target = found.stdout.trim();
  }
  await must(source, await git(dir, 'checkout', '--quiet', '--force', '--detach', target), 'check out');
  // What the ref holds and nothing else: files a recipe, berks or an operator left in the checkout are removed.
  await must(source, await git(dir, 'clean', '--quiet', '-ffdx'), 'clean the checkout of');
  const head = await git(dir, 'rev-parse', 'HEAD');
  await must(source, head, 'read the commit of');
  return head.stdout.trim();
}

function fetchFailure(source: GitSourceSpec, run: ToolOutcome, refNotFound: boolean): HookFailure {
  const url = redactUrl(source.url);
  const said = lastLines(run.stderr);
  if (refNotFound)
    return new HookFailure(
      `${source.label}: the ref ${JSON.stringify(source.ref ?? 'HEAD')} was not found in ${url}: give a branch, tag or commit the repository has${said}`,
    );
  return new HookFailure(`${source.label}: could not fetch ${url} (git exited with status ${run.status})${said}`);
}

async function must(source: GitSourceSpec, run: ToolOutcome, what: string): Promise<void> {
  if (run.status !== 0)
    throw new HookFailure(
      `${source.label}: could not ${what} ${redactUrl(source.url)} (git exited with status ${run.status})${lastLines(run.stderr)}`,
    );
}

/** The end of a tool's message, where git and ssh say what went wrong. */
export function lastLines(text: string): string {
  const lines = text.replace(/\r/g, '').trim().split('\n').slice(-6).join('\n');
  return lines ? `:\n${lines}` : '';
}

async function entries(dir: string): Promise<string[]> {
  return readdir(dir).catch((err: NodeJS.ErrnoException): string[] => {
    if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return [];
    throw err;
  });
}
