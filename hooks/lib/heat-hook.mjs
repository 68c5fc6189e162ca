// The library every heat-config hook imports. A hook reads one deployment JSON on stdin, does its work and prints one
// result JSON on stdout (hooks/README.md). It runs on an instance that has only `node`, so this file uses nothing but
// Node's own modules and stays plain JavaScript.
import { spawn } from 'node:child_process';
import { constants as fsConstants } from 'node:fs';
import { mkdir, open, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/** The keys of a result that are not outputs. */
export const STATUS_KEYS = Object.freeze(['deploy_stdout', 'deploy_stderr', 'deploy_status_code']);

// Inputs whose values never appear in a hook's log. deploy_signal_id is a pre-signed URL: whoever has it can signal.
const SECRET_NAME = /password|secret|token/i;

/** True for an input whose value must not be logged. */
export function isSecretInput(name) {
  return SECRET_NAME.test(name) || name === 'deploy_signal_id';
}

// Deployment ids name files in the working and outputs directories, so they must be plain file names.
const SAFE_ID = /^[A-Za-z0-9_][A-Za-z0-9._-]*$/;

/** A failure the hook reports as its result (status 1, the message as deploy_stderr), not a crash. */
export class HookFailure extends Error {
  constructor(message) {
    super(message);
    this.name = 'HookFailure';
  }
}

/**
 * An input value as an environment variable (or a config as file text): strings as they are, null as empty,
 * everything else as JSON.
 */
export function envValue(value) {
  if (value === null || value === undefined) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function localStamp(d) {
  const p = (n, w = 2) => String(n).padStart(w, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:` +
    `${p(d.getSeconds())},${p(d.getMilliseconds(), 3)}`;
}

/** Log lines on stderr in heat-config's format, with every secret input value replaced by ***. */
export class HookLog {
  constructor(name) {
    this.name = name;
    this.secrets = [];
  }

  /** Registers the values of the deployment's secret inputs (raw, and as they look inside JSON text). */
  addSecrets(inputs) {
    const found = new Set(this.secrets);
    for (const { name, value } of inputs) {
      if (!isSecretInput(name)) continue;
      const text = envValue(value);
      if (text === '') continue;
      found.add(text);
      found.add(JSON.stringify(text).slice(1, -1));
    }
    // Longest first, so a secret that contains another is replaced whole.
    this.secrets = [...found].sort((a, b) => b.length - a.length);
  }

  mask(text) {
    let out = String(text);
    for (const secret of this.secrets) out = out.split(secret).join('***');
    return out;
  }

  line(level, message) {
    process.stderr.write(`[${localStamp(new Date())}] (${this.name}) [${level}] ${this.mask(message)}\n`);
  }

  info(message) { this.line('INFO', message); }
  warn(message) { this.line('WARNING', message); }
  error(message) { this.line('ERROR', message); }
}

/**
 * The deployment from stdin text, with the fields every hook uses made safe: inputs and outputs as arrays of
 * objects with a string name, options as an object, an id usable as a file name.
 */
export function parseDeployment(text) {
  let data;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw new HookFailure(`the hook's stdin is not JSON (${err.message}): it expects one deployment object ` +
      'from the agent');
  }
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    throw new HookFailure('the hook\'s stdin is not a JSON object: it expects one deployment object from the agent');
  }
  if (typeof data.id !== 'string' || !SAFE_ID.test(data.id)) {
    throw new HookFailure(`the deployment id ${JSON.stringify(data.id)} is not usable as a file name ` +
      '(letters, digits, ".", "_" and "-" only)');
  }
  const named = (list) => (Array.isArray(list) ? list : [])
    .filter((item) => item !== null && typeof item === 'object' && typeof item.name === 'string');
  const isObject = data.options !== null && typeof data.options === 'object' && !Array.isArray(data.options);
  const options = isObject ? data.options : {};
  return { ...data, inputs: named(data.inputs), outputs: named(data.outputs), options };
}

/** The inputs as [name, value] pairs in order; a missing value is an empty string, as upstream. */
export function inputEntries(deployment) {
  return deployment.inputs.map((input) => [input.name, input.value === undefined ? '' : input.value]);
}

/** The inputs as one object (a later input of the same name wins); safe for any name, `__proto__` included. */
export function inputValues(deployment) {
  return Object.fromEntries(inputEntries(deployment));
}

/**
 * Environment variables for the inputs: prefix + name = envValue(value). Names or values the kernel cannot carry
 * (empty, "=", NUL) are left out with a warning instead of failing the whole spawn.
 */
export function inputEnv(deployment, log, prefix = '') {
  const env = {};
  for (const [name, value] of inputEntries(deployment)) {
    const text = envValue(value);
    if (name === '' || name.includes('=') || name.includes('\0') || text.includes('\0')) {
      log.warn(`input ${JSON.stringify(name)} cannot be an environment variable; left out`);
      continue;
    }
    env[prefix + name] = text;
  }
  return env;
}

/** A command from the environment variable when set and not empty, else the upstream default. */
export function fromEnv(name, fallback) {
  const value = process.env[name];
  return value ? value : fallback;
}

/**
 * A path from the environment variable when set and not empty, else the upstream default placed under
 * OS_CONFIG_AGENT_ROOT (set by the agent when it runs under --root, so a test or demo never writes to the real /var).
 */
export function pathFromEnv(name, fallback) {
  const value = process.env[name];
  return value ? value : underRoot(fallback);
}

/** An absolute default path under OS_CONFIG_AGENT_ROOT when that is set. */
export function underRoot(file) {
  const root = process.env.OS_CONFIG_AGENT_ROOT;
  return root ? path.join(root, file) : file;
}

/** Creates a directory (and missing parents) readable only by its owner; an existing one is left as it is. */
export async function prepareDir(dir) {
  await mkdir(dir, { recursive: true, mode: 0o700 });
}

/**
 * Writes a work file from scratch: truncated (upstream kept stale bytes after a shorter rewrite), with the given
 * mode even when the file existed, and never through a symbolic link planted in its place.
 */
export async function writeWorkFile(file, content, mode) {
  const flags = fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_TRUNC | fsConstants.O_NOFOLLOW;
  const handle = await open(file, flags, mode);
  try {
    await handle.chmod(mode);
    await handle.writeFile(content);
  } finally {
    await handle.close();
  }
}

/** Removes files the hook wrote for this run; a file already gone is fine. */
export async function removeFiles(...files) {
  await Promise.all(files.map((file) => rm(file, { force: true, recursive: true })));
}

/** Removes <outputsDir>/<id>.<anything>: outputs of an earlier run of the same deployment, or of this one once read. */
export async function removeOutputs(outputsDir, id) {
  let names;
  try {
    names = await readdir(outputsDir);
  } catch (err) {
    if (err.code === 'ENOENT') return;
    throw err;
  }
  await removeFiles(...names.filter((n) => n.startsWith(`${id}.`)).map((n) => path.join(outputsDir, n)));
}

/**
 * The declared outputs the tool wrote as <outputsPath>.<name> (whole file content); missing files are skipped. A
 * name with a "/" would read outside the outputs directory, so it is skipped too.
 */
export async function readOutputs(deployment, outputsPath, log) {
  const found = [];
  for (const { name } of deployment.outputs) {
    if (name === '' || name.includes('/') || name.includes('\0')) {
      log.warn(`output ${JSON.stringify(name)} cannot be a file name; not read`);
      continue;
    }
    try {
      found.push([name, await readFile(`${outputsPath}.${name}`, 'utf8')]);
    } catch (err) {
      if (err.code !== 'ENOENT') log.warn(`output ${name} could not be read: ${err.message}`);
    }
  }
  return Object.fromEntries(found);
}

/** A result object: the outputs, then the three status keys (which win over outputs of the same name). */
export function result({ outputs = {}, stdout = '', stderr = '', status }) {
  const out = Object.fromEntries(Object.entries(outputs).filter(([k]) => !STATUS_KEYS.includes(k)));
  out.deploy_stdout = stdout;
  out.deploy_stderr = stderr;
  out.deploy_status_code = status;
  return out;
}

/** A failure result with a message for the operator. */
export function failure(message) {
  return result({ stderr: message, status: 1 });
}

// Signals that end the hook are passed on to the tool, so it is not left running when the agent gives up on the hook.
const FORWARDED_SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'];

/**
 * Runs a command (argv array, never a shell) with stdin closed and stdout/stderr captured. Resolves with
 * {code, signal, stdout, stderr}, or {error} when the command could not be started.
 */
export function spawnCapture(command, args, { cwd, env } = {}) {
  return new Promise((resolve) => {
    let child;
    try {
      child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (err) {
      resolve({ error: err });
      return;
    }
    const stdout = [];
    const stderr = [];
    child.stdout.on('data', (chunk) => stdout.push(chunk));
    child.stderr.on('data', (chunk) => stderr.push(chunk));
    const forward = (sig) => child.kill(sig);
    for (const sig of FORWARDED_SIGNALS) process.on(sig, forward);
    let settled = false;
    const settle = (value) => {
      if (settled) return;
      settled = true;
      for (const sig of FORWARDED_SIGNALS) process.off(sig, forward);
      resolve(value);
    };
    child.on('error', (err) => {
      // After a successful start an error is about signalling the child; its exit still comes through 'close'.
      if (child.pid === undefined) settle({ error: err });
    });
    child.on('close', (code, signal) => settle({
      code,
      signal,
      stdout: Buffer.concat(stdout).toString('utf8'),
      stderr: Buffer.concat(stderr).toString('utf8'),
    }));
  });
}

/** Quotes an argv for a log line (the log masks secret values afterwards). */
export function formatCommand(command, args) {
  const quote = (a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, '\'\\\'\'')}'`);
  return [command, ...args].map(quote).join(' ');
}

/**
 * Runs a tool and returns {status, stdout, stderr}; status is the exit code, or 128 + the signal number when the
 * tool was killed. A tool that cannot be found fails the hook with `missing` (which tool, what to install); any
 * other start failure fails it with the system's reason.
 */
export async function runTool(command, args, { cwd, env, log, missing }) {
  log.info(`running ${formatCommand(command, args)}`);
  const run = await spawnCapture(command, args, { cwd, env });
  if (run.error) {
    if (run.error.code === 'ENOENT') throw new HookFailure(missing);
    throw new HookFailure(`could not run ${command}: ${run.error.message}`);
  }
  let status = run.code;
  let stderr = run.stderr;
  if (status === null) {
    status = 128 + (os.constants.signals[run.signal] ?? 0);
    const separator = stderr === '' || stderr.endsWith('\n') ? '' : '\n';
    stderr += `${separator}${path.basename(command)} was killed by ${run.signal}\n`;
  }
  log.info(`${path.basename(command)} exited with status ${status}`);
  return { status, stdout: run.stdout, stderr };
}

/** The message for a tool that is not installed. */
export function notInstalled(tool, command, envName, install) {
  return `${tool} is not installed: the command "${command}" was not found (PATH=${process.env.PATH ?? ''}). ` +
    `${install} Or set ${envName} to the command's path.`;
}

/** `hostname -f`, or null (with a warning) when it fails. */
export async function hostnameF(log) {
  const run = await spawnCapture('hostname', ['-f']);
  const name = run.error ? '' : run.stdout.trim();
  if (run.code === 0 && name !== '') return name;
  log.warn(`"hostname -f" failed (${run.error ? run.error.message : `status ${run.code}: ${run.stderr.trim()}`})`);
  return null;
}

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * The whole life of a hook: read and check the deployment, run `handler(deployment, log)`, print its result. A
 * HookFailure becomes a failure result; any other error too, and the hook then also exits 1. stdout always gets
 * one JSON object, so the agent never mistakes a broken hook for an empty success.
 */
export async function runHook(group, handler) {
  const log = new HookLog(`heat-config-${group}`);
  let out;
  try {
    const deployment = parseDeployment(await readStdin());
    log.addSecrets(deployment.inputs);
    out = await handler(deployment, log);
  } catch (err) {
    if (err instanceof HookFailure) {
      log.error(err.message);
      out = failure(log.mask(err.message));
    } else {
      log.error(`the ${group} hook failed: ${err && err.stack ? err.stack : err}`);
      out = failure(log.mask(`the ${group} hook failed: ${err && err.message ? err.message : err}`));
      process.exitCode = 1;
    }
  }
  process.stdout.write(JSON.stringify(out));
}
