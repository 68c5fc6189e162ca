import { promises as fs } from 'node:fs';
import path from 'node:path';
import { isRegularFile } from '../util/path-kind.js';
import { runProcess } from '../util/process-group.js';
import { compareBytes, ENV_FILE_PATTERN } from './run-parts-selection.js';

// environment.d, as dib-run-parts reads it: every regular file (or symlink to one) directly in `<base>/environment.d`
// whose name is made of [0-9A-Za-z_.-] is *sourced* by bash (it need not be executable), in byte order of its path,
// with `set -eu -o pipefail` in force and xtrace on. Only exported variables reach the scripts. To give scripts and
// in-process steps exactly that environment, bash sources the files and then prints its environment with `env -0`
// on its stdout, which it keeps aside as descriptor 3 from its first line: anything the files themselves print goes
// to stderr (the agent's stdout carries its logs).

/** Bytes of `env -0` output accepted: far above what exec(2) passes on to a script (ARG_MAX). */
const MAX_ENVIRONMENT_BYTES = 16 * 1024 * 1024;

/** The files to source from `envDir`, in order (full paths). None when the directory is missing. */
export async function environmentFiles(envDir: string): Promise<string[]> {
  let names: string[];
  try {
    names = await fs.readdir(envDir);
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const name of names.filter((n) => ENV_FILE_PATTERN.test(n))) {
    const file = path.join(envDir, name);
    // A dangling symlink is not a file: find -xtype f skips it too.
    if (isRegularFile(file)) out.push(file);
  }
  return out.sort(compareBytes);
}

export class EnvironmentSourceError extends Error {
  override name = 'EnvironmentSourceError';
  constructor(
    message: string,
    readonly exitCode: number | null,
    readonly signal: string | null,
  ) {
    super(message);
  }
}

// $0 is "environment.d"; the files are the positional arguments. The announcement mirrors dib-run-parts' own.
const SOURCE_SCRIPT = [
  'exec 3>&1 >&2',
  'set -eu -o pipefail',
  'for __oca_env_file in "$@"; do',
  '  echo "Sourcing environment file $__oca_env_file" >&2',
  '  set -o xtrace',
  '  source "$__oca_env_file" >&2',
  '  set +o xtrace',
  'done',
  'unset __oca_env_file',
  'exec env -0 >&3',
].join('\n');

/** Parse `env -0` output. Bash-exported functions (BASH_FUNC_x%%=...) are kept: children of bash expect them. */
export function parseEnvZero(output: string | Buffer): Record<string, string> {
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const entry of output.toString().split('\0')) {
    if (entry === '') continue;
    const eq = entry.indexOf('=');
    if (eq <= 0) continue;
    out[entry.slice(0, eq)] = entry.slice(eq + 1);
  }
  return out;
}

export interface SourceEnvironmentOptions {
  readonly signal?: AbortSignal;
  /** Where bash's stderr (the xtrace of the files) goes; default the agent's stderr. */
  readonly stderr?: number | 'ignore';
}

/**
 * The environment scripts see after sourcing `files` on top of `env`. With no files, `env` itself (no bash is
 * started). A failing file rejects with EnvironmentSourceError.
 */
export async function sourceEnvironment(
  files: readonly string[],
  env: Readonly<Record<string, string>>,
  options: SourceEnvironmentOptions = {},
): Promise<Record<string, string>> {
  if (files.length === 0) return { ...env };
  const result = await runProcess({
    file: 'bash',
    args: ['-c', SOURCE_SCRIPT, 'environment.d', ...files],
    env: { ...env },
    stderr: options.stderr ?? 2,
    maxBufferBytes: MAX_ENVIRONMENT_BYTES,
    overflow: 'kill',
    signal: options.signal,
  });
  if (result.spawnError !== undefined)
    throw new EnvironmentSourceError(
      `cannot run bash to source environment.d: ${result.spawnError.message}`,
      null,
      null,
    );
  const { exitCode: code, signal } = result;
  if (result.overflowed)
    throw new EnvironmentSourceError(
      `sourcing environment.d printed more than ${MAX_ENVIRONMENT_BYTES} bytes of environment`,
      code,
      signal,
    );
  if (code !== 0) {
    throw new EnvironmentSourceError(
      `sourcing environment.d failed (${code !== null ? `exit status ${code}` : `signal ${signal ?? 'unknown'}`}); the xtrace above shows the failing line`,
      code,
      signal,
    );
  }
  return parseEnvZero(result.stdout);
}
