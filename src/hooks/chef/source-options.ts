import { createHash } from 'node:crypto';
import path from 'node:path';
import { isJsonObject, type JsonObject } from '../../util/json-merge.js';
import { redactUrl } from '../../log/redact.js';
import { inputText, isSecretInput } from '../../heat/deployment.js';
import { HookFailure, type HookDeployment } from '../contract.js';

// The chef hook's cookbook sources, read from the deployment's options: upstream's `kitchen` (a git URL cloned into
// `kitchen_path`) with `kitchen_ref`, and `kitchen_sources`, a list of more git repositories and tarballs. Every
// value comes from outside, so each is checked here and a bad one fails the deployment naming the option.

/** Credentials a git source takes from the deployment's inputs (values, never logged). */
export interface GitCredentials {
  /** The input holding an SSH private key, and its value. */
  readonly sshKey?: SecretInput;
  /** The input holding known_hosts lines for the server's host key, and its value. */
  readonly knownHosts?: SecretInput;
  /** The input holding an HTTPS token, and its value. */
  readonly token?: SecretInput;
  /** The user name given with the token. */
  readonly tokenUser: string;
}

export interface SecretInput {
  readonly input: string;
  readonly value: string;
}

export interface GitSourceSpec {
  readonly kind: 'git';
  /** What the operator reads in messages: `kitchen`, or `kitchen_sources[2]`. */
  readonly label: string;
  readonly url: string;
  /** Branch, tag or commit; the remote's default branch when absent. */
  readonly ref?: string;
  readonly credentials: GitCredentials;
  /** Where the checkout lives (kept between runs and updated). */
  readonly dir: string;
}

export interface TarballSourceSpec {
  readonly kind: 'tarball';
  readonly label: string;
  readonly url: string;
  /** Lower-case hex SHA-256 the download must have. */
  readonly sha256?: string;
  readonly dir: string;
}

export type SourceSpec = GitSourceSpec | TarballSourceSpec;

export interface KitchenOptions {
  /** The main kitchen's directory: roles and environments come from it, and its cookbooks come first. */
  readonly kitchenPath: string;
  /** `kitchen` first (when given), then `kitchen_sources` in order. */
  readonly sources: readonly SourceSpec[];
}

/** Inputs the main `kitchen` takes its credentials from when present. */
export const DEFAULT_CREDENTIAL_INPUTS = {
  sshKey: 'kitchen_ssh_key',
  knownHosts: 'kitchen_known_hosts',
  token: 'kitchen_token',
} as const;
/** GitHub's user name for a token; GitLab and Gitea accept any name with a personal access token. */
export const DEFAULT_TOKEN_USER = 'x-access-token';
const MAX_SOURCES = 32;

const GIT_KEYS = ['git', 'ref', 'ssh_key_input', 'known_hosts_input', 'token_input', 'token_user'];
const TARBALL_KEYS = ['tarball', 'sha256'];

/** The sources the deployment asks for; `working` is the hook's working directory. */
export function kitchenOptions(deployment: HookDeployment, working: string): KitchenOptions {
  const { options } = deployment;
  const kitchenPath = path.resolve(working, options.kitchen_path ? inputText(options.kitchen_path) : 'kitchen');
  checkKitchenPath(kitchenPath, working);
  const sources: SourceSpec[] = [];
  if (options.kitchen) {
    sources.push({
      kind: 'git',
      label: 'kitchen',
      url: gitUrl(options.kitchen, 'kitchen'),
      ...optionalRef(options.kitchen_ref, 'kitchen_ref'),
      credentials: {
        ...defaultCredential(deployment, 'sshKey'),
        ...defaultCredential(deployment, 'knownHosts'),
        ...defaultCredential(deployment, 'token'),
        tokenUser: tokenUser(options.kitchen_token_user, 'kitchen_token_user'),
      },
      dir: kitchenPath,
    });
  } else if (options.kitchen_ref !== undefined) {
    throw new HookFailure('the option kitchen_ref is given without kitchen: name the git repository in kitchen');
  }
  const extra = options.kitchen_sources;
  if (extra !== undefined && extra !== null) {
    if (!Array.isArray(extra))
      throw new HookFailure(
        'the option kitchen_sources must be a list of sources such as [{"git": "https://…", "ref": "v1"}, {"tarball": "https://…"}]',
      );
    if (extra.length > MAX_SOURCES)
      throw new HookFailure(`the option kitchen_sources lists ${extra.length} sources; at most ${MAX_SOURCES}`);
    extra.forEach((entry, i) => sources.push(extraSource(deployment, entry, `kitchen_sources[${i}]`, working)));
  }
  const seen = new Set<string>();
  for (const source of sources) {
    if (seen.has(source.url))
      throw new HookFailure(`${source.label}: the source ${redactUrl(source.url)} is listed twice; list it once`);
    seen.add(source.url);
  }
  return { kitchenPath, sources };
}

/** Directories of the working directory the hook itself fills and empties. */
export const MANAGED_DIRS = ['sources', 'cookbooks', 'berks', 'policy', 'credentials', 'node'];

/** kitchen_path may not hold the working directory, nor lie in a directory the hook manages. */
function checkKitchenPath(kitchenPath: string, working: string): void {
  const inside = path.relative(working, kitchenPath);
  const [first = ''] = inside.split(path.sep);
  if (!path.relative(kitchenPath, working).startsWith('..') || MANAGED_DIRS.includes(first))
    throw new HookFailure(
      `the option kitchen_path is ${kitchenPath}, which the hook's own files use: point it at a directory of its own, such as ${path.join(working, 'kitchen')}`,
    );
}

function extraSource(deployment: HookDeployment, entry: unknown, label: string, working: string): SourceSpec {
  if (!isJsonObject(entry))
    throw new HookFailure(`${label} must be an object with "git" (a repository URL) or "tarball" (an archive URL)`);
  const isGit = entry.git !== undefined;
  if (isGit === (entry.tarball !== undefined))
    throw new HookFailure(`${label} must have exactly one of "git" (a repository URL) or "tarball" (an archive URL)`);
  const allowed = isGit ? GIT_KEYS : TARBALL_KEYS;
  const unknown = Object.keys(entry).filter((k) => !allowed.includes(k));
  if (unknown.length > 0)
    throw new HookFailure(
      `${label} has unknown keys ${unknown.map((k) => JSON.stringify(k)).join(', ')}; a ${isGit ? 'git' : 'tarball'} source takes ${allowed.join(', ')}`,
    );
  if (isGit) {
    const url = gitUrl(entry.git, `${label}.git`);
    return {
      kind: 'git',
      label,
      url,
      ...optionalRef(entry.ref, `${label}.ref`),
      credentials: {
        ...namedCredential(deployment, entry, 'ssh_key_input', 'sshKey', label),
        ...namedCredential(deployment, entry, 'known_hosts_input', 'knownHosts', label),
        ...namedCredential(deployment, entry, 'token_input', 'token', label),
        tokenUser: tokenUser(entry.token_user, `${label}.token_user`),
      },
      dir: path.join(working, 'sources', cacheName('git', url)),
    };
  }
  const url = tarballUrl(entry.tarball, `${label}.tarball`);
  return {
    kind: 'tarball',
    label,
    url,
    ...optionalSha256(entry.sha256, `${label}.sha256`),
    dir: path.join(working, 'sources', cacheName('tarball', url)),
  };
}

/** A git URL or path: text, no option-like start, and no password in it (options are not secret; inputs are). */
function gitUrl(value: unknown, option: string): string {
  if (typeof value !== 'string' || value.trim() === '')
    throw new HookFailure(`the option ${option} must be a git repository URL (text)`);
  if (value.startsWith('-') || /[\0\n\r]/.test(value))
    throw new HookFailure(`the option ${option} is not a git repository URL: ${JSON.stringify(redactUrl(value))}`);
  refuseUrlPassword(value, option);
  return value;
}

function tarballUrl(value: unknown, option: string): string {
  if (typeof value !== 'string') throw new HookFailure(`the option ${option} must be an http or https URL (text)`);
  let scheme: string;
  try {
    scheme = new URL(value).protocol;
  } catch {
    throw new HookFailure(`the option ${option} is not a URL: ${JSON.stringify(redactUrl(value))}`);
  }
  if (scheme !== 'http:' && scheme !== 'https:')
    throw new HookFailure(`the option ${option} must be an http or https URL, not ${scheme}`);
  refuseUrlPassword(value, option);
  return value;
}

function refuseUrlPassword(value: string, option: string): void {
  let password = '';
  try {
    password = new URL(value).password;
  } catch {
    return; // scp-like "git@host:repo" or a path: no password can be written there.
  }
  if (password !== '')
    throw new HookFailure(
      `the option ${option} has a password in its URL: options are not secret; give the token as a deployment input and name it in token_input (kitchen_token for kitchen)`,
    );
}

/** A git ref as a fetch argument: no option, refspec or revision syntax; git judges the rest. */
function optionalRef(value: unknown, option: string): { ref?: string } {
  if (value === undefined || value === null || value === '') return {};
  if (typeof value !== 'string')
    throw new HookFailure(`the option ${option} must be a branch, tag or commit name (text)`);
  if (value.startsWith('-') || value.includes('..') || /[\s\p{Cc}:?*[\\^~]/u.test(value))
    throw new HookFailure(`the option ${option} is not a branch, tag or commit name: ${JSON.stringify(value)}`);
  return { ref: value };
}

function optionalSha256(value: unknown, option: string): { sha256?: string } {
  if (value === undefined || value === null || value === '') return {};
  if (typeof value !== 'string' || !/^[0-9a-f]{64}$/i.test(value))
    throw new HookFailure(`the option ${option} must be a SHA-256 checksum: 64 hexadecimal digits`);
  return { sha256: value.toLowerCase() };
}

function tokenUser(value: unknown, option: string): string {
  if (value === undefined || value === null || value === '') return DEFAULT_TOKEN_USER;
  if (typeof value !== 'string' || /[\s\p{Cc}]/u.test(value))
    throw new HookFailure(`the option ${option} must be a user name without spaces`);
  return value;
}

type CredentialKind = keyof typeof DEFAULT_CREDENTIAL_INPUTS;

/** The main kitchen's credential from its input of the default name, when the deployment has one with a value. */
function defaultCredential(
  deployment: HookDeployment,
  kind: CredentialKind,
): Partial<Record<CredentialKind, SecretInput>> {
  const input = DEFAULT_CREDENTIAL_INPUTS[kind];
  const value = inputValue(deployment, input);
  return value ? { [kind]: { input, value } } : {};
}

/** A source's credential from the input its option names; the input must exist and be secret by the agent's rule. */
function namedCredential(
  deployment: HookDeployment,
  entry: JsonObject,
  key: string,
  kind: CredentialKind,
  label: string,
): Partial<Record<CredentialKind, SecretInput>> {
  const input = entry[key];
  if (input === undefined || input === null || input === '') return {};
  if (typeof input !== 'string') throw new HookFailure(`${label}.${key} must name a deployment input (text)`);
  if (!isSecretInput(input))
    throw new HookFailure(
      `${label}.${key} names the input "${input}", which the agent would show and log: name it with password, secret, token, private_key, ssh_key or known_hosts in it`,
    );
  const value = inputValue(deployment, input);
  if (!value)
    throw new HookFailure(
      `${label}.${key} names the input "${input}", which the deployment does not have (or it is empty)`,
    );
  return { [kind]: { input, value } };
}

function inputValue(deployment: HookDeployment, name: string): string {
  let value = '';
  for (const input of deployment.inputs) if (input.name === name) value = inputText(input.value);
  return value;
}

/** The names of the inputs the sources take credentials from (they are not node attributes). */
export function credentialInputs(sources: readonly SourceSpec[]): Set<string> {
  const names = new Set<string>();
  for (const s of sources) {
    if (s.kind !== 'git') continue;
    for (const c of [s.credentials.sshKey, s.credentials.knownHosts, s.credentials.token]) if (c) names.add(c.input);
  }
  return names;
}

/** A cache directory name: readable (the URL's last part) and unique (a hash of the whole URL). */
function cacheName(kind: string, url: string): string {
  const base = (
    url
      .replace(/[?#].*$/, '')
      .replace(/\/+$/, '')
      .split(/[/:]/)
      .at(-1) ?? ''
  )
    .replace(/\.(git|tar\.gz|tgz|tar\.bz2|tbz2|tar\.xz|txz|tar)$/i, '')
    .replace(/[^\w.-]/g, '_')
    .replace(/^\.+/, '')
    .slice(0, 40);
  const hash = createHash('sha256').update(url).digest('hex').slice(0, 12);
  return `${kind}-${base || 'source'}-${hash}`;
}
