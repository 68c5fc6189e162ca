import { mkdtemp } from 'node:fs/promises';
import path from 'node:path';
import { HookFailure, type HookContext } from '../contract.js';
import { findExecutable } from '../../util/executable.js';
import { notInstalled, runTool } from '../kit/run-tool.js';
import { neededBecause, SSH, SSH_KEYGEN } from './tools.js';
import { makeDirs, removeFiles, writeWorkFile } from '../kit/work-files.js';
import type { GitCredentials, GitSourceSpec } from './source-options.js';

// How git reaches one source: an environment of our own making (none of the agent's GIT_* variables, no system or
// user git configuration, no credential helper but ours, no prompt, no ssh agent), an ssh command we build, and the
// source's credentials. An SSH key and known_hosts lines are written 0600 into a 0700 directory that lives for the
// source's fetch only; a token reaches git through a credential helper scoped to the source's own origin, so it is
// never in a URL, an argument or a file.

export interface GitAccess {
  /** The environment every git command for this source runs with. */
  readonly env: NodeJS.ProcessEnv;
  /** Removes the credential files. */
  close(): Promise<void>;
}

/** The directory that holds credential files while a fetch runs; anything left there by a killed run is removed. */
export const credentialsDir = (working: string) => path.join(working, 'credentials');

const TOKEN_USER_VAR = 'OCA_KITCHEN_TOKEN_USER';
const TOKEN_VAR = 'OCA_KITCHEN_TOKEN';
// git runs this with "get", "store" or "erase"; only "get" answers.
const TOKEN_HELPER = `!f() { test "$1" = get && printf 'username=%s\\npassword=%s\\n' "$${TOKEN_USER_VAR}" "$${TOKEN_VAR}"; }; f`;

/** Variables of the agent's environment that would change what git or ssh does. */
const DROPPED = /^(GIT_|SSH_AUTH_SOCK$|SSH_ASKPASS|OCA_KITCHEN_)/;

export async function openGitAccess(ctx: HookContext, source: GitSourceSpec, working: string): Promise<GitAccess> {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(ctx.env)) if (!DROPPED.test(k)) env[k] = v;
  Object.assign(env, {
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    GIT_ASKPASS: '/bin/false',
  });
  const { credentials } = source;
  const config: Array<[string, string]> = [];
  if (credentials.token) {
    const origin = tokenOrigin(source);
    config.push([`credential.${origin}.helper`, TOKEN_HELPER]);
    env[TOKEN_USER_VAR] = credentials.tokenUser;
    env[TOKEN_VAR] = credentials.token.value;
  }
  config.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = key;
    env[`GIT_CONFIG_VALUE_${i}`] = value;
  });
  env.GIT_CONFIG_COUNT = String(config.length);

  let dir: string | undefined;
  try {
    const ssh: string[] = ['ssh', '-o', 'BatchMode=yes', '-o', 'StrictHostKeyChecking=yes'];
    if (credentials.sshKey || credentials.knownHosts) {
      if (!(await findExecutable('ssh', env)))
        throw new HookFailure(notInstalled(env, neededBecause(SSH, `${source.label} needs it.`), 'ssh'));
      await makeDirs(credentialsDir(working));
      dir = await mkdtemp(path.join(credentialsDir(working), 'fetch-'));
    }
    if (dir && credentials.sshKey) {
      const key = path.join(dir, 'key');
      await writeWorkFile(key, keyText(credentials.sshKey.value), 0o600);
      await checkKey(ctx, env, key, credentials, source.label);
      // Only this key, no agent, no ~/.ssh/config of the agent's user: what ssh offers is what the deployment gave.
      ssh.push('-F', '/dev/null', '-o', 'IdentitiesOnly=yes', '-o', 'IdentityAgent=none', '-i', key);
    }
    if (dir && credentials.knownHosts) {
      const knownHosts = path.join(dir, 'known_hosts');
      await writeWorkFile(knownHosts, keyText(credentials.knownHosts.value), 0o600);
      ssh.push('-o', `UserKnownHostsFile=${knownHosts}`, '-o', 'GlobalKnownHostsFile=/dev/null');
      ssh.push('-o', 'UpdateHostKeys=no');
    }
    env.GIT_SSH_COMMAND = ssh.map(shellWord).join(' ');
  } catch (err) {
    if (dir) await removeFiles(dir);
    throw err;
  }
  const made = dir;
  return { env, close: async () => (made ? removeFiles(made) : undefined) };
}

/** Removes credential files a killed run left behind (runs of the chef hook do not overlap). */
export async function sweepCredentials(working: string): Promise<void> {
  await removeFiles(credentialsDir(working));
}

/** Key and known_hosts text as ssh reads it: Unix line ends and a final newline (Heat parameters often lose it). */
function keyText(value: string): string {
  return `${value.replace(/\r\n/g, '\n').trimEnd()}\n`;
}

/** ssh-keygen reads the key's public half: a key it cannot read fails here, naming the input, never the value. */
async function checkKey(
  ctx: HookContext,
  env: NodeJS.ProcessEnv,
  key: string,
  credentials: GitCredentials,
  label: string,
): Promise<void> {
  const run = await runTool(
    ctx,
    { file: 'ssh-keygen', args: ['-y', '-P', '', '-f', key], env },
    notInstalled(env, neededBecause(SSH_KEYGEN, `${label} needs it.`), 'ssh-keygen'),
  );
  if (run.status === 0) return;
  throw new HookFailure(
    `${label}: the input ${credentials.sshKey?.input ?? ''} is not an SSH private key that ssh can use (an OpenSSH or PEM private key without a passphrase)`,
  );
}

/** The origin a token is offered to: the source's own scheme, host and port, nothing else. */
function tokenOrigin(source: GitSourceSpec): string {
  let u: URL;
  try {
    u = new URL(source.url);
  } catch {
    throw new HookFailure(`${source.label}: a token is given, but the repository is not an http or https URL`);
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:')
    throw new HookFailure(`${source.label}: a token is given, but the repository is not an http or https URL`);
  return u.origin;
}

/** A word for the shell git runs GIT_SSH_COMMAND with. */
function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, "'\\''")}'`;
}
