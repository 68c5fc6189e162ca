import { constants } from 'node:os';
import { isJsonObject, shallowMerge, type JsonObject } from '../util/json-merge.js';
import { ExactNumber } from '../util/exact-number.js';
import { MAX_JSON_DEPTH } from '../util/json-depth.js';
import { pythonJsonDumps } from '../util/python-json.js';
import { parsePythonJson, PythonJsonError } from '../util/python-json-parse.js';
import type { DeploymentOutput } from './deployment.js';
import type { ProcessResult as HookResult } from '../util/process-group.js';
import type { Transport } from './signal-target.js';

// The signal a hook's result turns into (as heat-config-notify builds it from the hook's output), how Heat will judge
// it (a non-zero deploy_status_code fails the deployment), and the size cap.
//
// As upstream: a hook's stdout that parses as a JSON object is the signal, whatever the exit code; otherwise the
// captured text and exit code become {deploy_stdout, deploy_stderr, deploy_status_code}. Differences, each so that a
// failure reaches Heat instead of passing for success or leaving the stack waiting: a JSON answer without
// deploy_status_code from a hook that exited non-zero gets the exit code; a hook killed by a signal reports 128+N;
// a hook that could not be started, timed out, or is missing reports that in deploy_stderr with 126/127/124; and an
// empty, successful answer still carries the (empty) text fields instead of being `{}`.

/** Heat's max_json_body_size is 1 MiB; upstream aims for 950,000 characters of JSON. */
export const SIGNAL_LIMIT_BYTES = 950_000;

/** Zaqar refuses posts over max_messages_post_size (256 KiB by default), wrapper included. */
export const ZAQAR_SIGNAL_LIMIT_BYTES = 250_000;

export function signalLimitFor(transport: Transport): number {
  return transport === 'ZAQAR_SIGNAL' ? ZAQAR_SIGNAL_LIMIT_BYTES : SIGNAL_LIMIT_BYTES;
}

export const STATUS_NOT_EXECUTABLE = 126;
export const STATUS_NO_HOOK = 127;
const STATUS_TIMED_OUT = 124;

const PREFIX = 'os-config-agent: ';

export function failureBody(message: string, statusCode: number, stdout = '', stderr = ''): JsonObject {
  const note = `${PREFIX}${message}`;
  return {
    deploy_stdout: stdout,
    deploy_stderr: stderr === '' ? note : `${stderr.replace(/\n?$/, '\n')}${note}`,
    deploy_status_code: statusCode,
  };
}

/** The signal body for a finished hook. `hook` is the path shown to the operator. */
export function bodyFromHookResult(result: HookResult, hook: string, timeoutSeconds: number): JsonObject {
  if (result.spawnError) {
    const status = result.spawnError.code === 'ENOENT' ? STATUS_NO_HOOK : STATUS_NOT_EXECUTABLE;
    return failureBody(
      `hook ${hook} could not be started (${result.spawnError.code}); check that it exists, is executable and names a valid interpreter`,
      status,
    );
  }
  if (result.timedOut) {
    return failureBody(
      `hook ${hook} did not finish within ${timeoutSeconds} s; its process group was killed`,
      STATUS_TIMED_OUT,
      result.stdout,
      result.stderr,
    );
  }
  const code = result.exitCode ?? (result.signal ? 128 + (constants.signals[result.signal as NodeJS.Signals] ?? 0) : 1);
  const parsed = result.stdout !== '' && !result.stdoutTruncated ? parseObject(result.stdout) : undefined;
  if (parsed === TOO_DEEP)
    return failureBody(
      `hook ${hook} printed JSON nested deeper than ${MAX_JSON_DEPTH} levels; its answer was refused (exit code ${code})`,
      code === 0 ? 1 : code,
      '',
      result.stderr,
    );
  if (parsed) {
    if (code !== 0 && !Object.hasOwn(parsed, 'deploy_status_code')) parsed.deploy_status_code = code;
    return parsed;
  }
  if (result.signal)
    return failureBody(`hook ${hook} was killed by ${result.signal}`, code, result.stdout, result.stderr);
  return { deploy_stdout: result.stdout, deploy_stderr: result.stderr, deploy_status_code: code };
}

const TOO_DEEP = Symbol('too deep');

/**
 * The hook's answer read as heat-config reads it (Python's json: exact numbers, NaN, Infinity). An answer nested
 * deeper than any legitimate one is refused: upstream's reader dies on it, and the agent's would exhaust its stack.
 */
function parseObject(text: string): JsonObject | typeof TOO_DEEP | undefined {
  try {
    const value: unknown = parsePythonJson(text, { maxDepth: MAX_JSON_DEPTH });
    return isJsonObject(value) ? value : undefined;
  } catch (err) {
    return err instanceof PythonJsonError && err.tooDeep ? TOO_DEEP : undefined;
  }
}

export interface SignalVerdict {
  readonly failed: boolean;
  /** deploy_status_code as text, when present. */
  readonly statusCode?: string;
  readonly reason?: string;
}

/**
 * How Heat reads a signal: failed when deploy_status_code is present, truthy (in Python's sense) and not "0", or
 * when an output declared with error_output is present.
 */
export function judgeSignal(body: JsonObject, outputs: readonly DeploymentOutput[]): SignalVerdict {
  const raw = body.deploy_status_code;
  const statusCode =
    raw === undefined || raw === null ? undefined : typeof raw === 'string' ? raw : pythonJsonDumps(raw);
  if (pythonTruthy(raw) && statusCode !== '0')
    return { failed: true, statusCode, reason: `deploy_status_code ${statusCode}` };
  for (const output of outputs) {
    if (pythonTruthy(output.error_output) && Object.hasOwn(body, output.name)) {
      return {
        failed: true,
        ...(statusCode !== undefined ? { statusCode } : {}),
        reason: `error output ${output.name}`,
      };
    }
  }
  return { failed: false, ...(statusCode !== undefined ? { statusCode } : {}) };
}

function pythonTruthy(v: unknown): boolean {
  if (v === undefined || v === null || v === false || v === 0 || v === '') return false;
  if (v instanceof ExactNumber) return v.value !== 0;
  if (Array.isArray(v)) return v.length > 0;
  if (isJsonObject(v)) return Object.keys(v).length > 0;
  return true;
}

export interface TrimmedBody {
  readonly body: JsonObject;
  /** The serialised body to send (ASCII-only JSON, as upstream sends it). */
  readonly text: string;
  /** Characters cut from text fields. */
  readonly trimmed: number;
}

/**
 * Fit a signal into `limit` bytes of JSON by cutting the beginning of deploy_stdout and deploy_stderr in proportion
 * to their size (the end of a log says what went wrong), then, if still needed, of the largest other text values.
 * Each cut field starts with a note saying how much was cut. A body that cannot fit even so (huge non-text outputs)
 * becomes a failure saying why.
 */
export function trimSignalBody(body: JsonObject, limit = SIGNAL_LIMIT_BYTES): TrimmedBody {
  let text = pythonJsonDumps(body);
  if (text.length <= limit) return { body, text, trimmed: 0 };
  const out = shallowMerge({}, body);
  const cutSoFar = new Map<string, { tail: string; removed: number }>();
  const standard = ['deploy_stdout', 'deploy_stderr'].filter((k) => typeof out[k] === 'string');
  const others = Object.keys(out)
    .filter((k) => !standard.includes(k) && typeof out[k] === 'string')
    .sort((a, b) => (out[b] as string).length - (out[a] as string).length);
  for (const keys of [standard, others]) {
    // A few rounds absorb the notes' own length and rounding.
    for (let round = 0; round < 4 && text.length > limit && keys.length > 0; round++) {
      const excess = text.length - limit;
      const tails = keys.map((k) => cutSoFar.get(k) ?? { tail: out[k] as string, removed: 0 });
      const sizes = tails.map((t) => escapedLength(t.tail));
      const total = sizes.reduce((a, b) => a + b, 0);
      if (total === 0) break;
      keys.forEach((key, i) => {
        const size = sizes[i]!;
        const cut = Math.min(size, Math.ceil(((excess + 64 * keys.length) * size) / total));
        if (cut <= 0) return;
        const prior = tails[i]!;
        const { rest, removed } = keepTail(prior.tail, size - cut);
        const done = { tail: rest, removed: prior.removed + removed };
        cutSoFar.set(key, done);
        out[key] = `[${PREFIX.trim()} ${done.removed} characters trimmed from the start]\n${rest}`;
      });
      text = pythonJsonDumps(out);
    }
    if (text.length <= limit)
      return { body: out, text, trimmed: [...cutSoFar.values()].reduce((a, c) => a + c.removed, 0) };
  }
  const status =
    pythonTruthy(body.deploy_status_code) && String(body.deploy_status_code) !== '0' ? body.deploy_status_code : 1;
  const fallback = failureBody(
    `the signal is ${pythonJsonDumps(body).length} bytes even with its text trimmed, over the ${limit}-byte limit; outputs were dropped`,
    1,
  );
  fallback.deploy_status_code = status;
  return {
    body: fallback,
    text: pythonJsonDumps(fallback),
    trimmed: [...cutSoFar.values()].reduce((a, c) => a + c.removed, 0),
  };
}

/** Length of a string inside ASCII-only JSON, without the quotes. */
function escapedLength(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) n += charCost(s.charCodeAt(i));
  return n;
}

function charCost(code: number): number {
  if (
    code === 0x22 ||
    code === 0x5c ||
    code === 0x08 ||
    code === 0x0c ||
    code === 0x0a ||
    code === 0x0d ||
    code === 0x09
  )
    return 2;
  if (code < 0x20 || code > 0x7e) return 6;
  return 1;
}

/** The longest tail of `s` whose escaped length is at most `budget`, never splitting a surrogate pair. */
function keepTail(s: string, budget: number): { rest: string; removed: number } {
  let used = 0;
  let start = s.length;
  while (start > 0) {
    const cost = charCost(s.charCodeAt(start - 1));
    if (used + cost > budget) break;
    used += cost;
    start--;
  }
  const code = s.charCodeAt(start);
  if (start < s.length && code >= 0xdc00 && code <= 0xdfff) start++;
  return { rest: s.slice(start), removed: start };
}
