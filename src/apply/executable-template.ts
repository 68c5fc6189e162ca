import { pythonJsonDumps } from '../util/python-json.js';
import { TemplateError } from './apply-errors.js';

// Executable templates: run with no arguments, the (sub-hashed) metadata as JSON on stdin; stdout is the file body.
// A non-zero exit fails the whole render. Upstream had no time limit; a hung script would stall every later cycle, so
// one is applied here. The output cap is per stream (stdout, stderr).

const EXECUTABLE_TEMPLATE_TIMEOUT_MS = 10 * 60 * 1000;
const MAX_OUTPUT_BYTES = 64 * 1024 * 1024;

export async function runExecutableTemplate(
  file: string,
  metadata: unknown,
  timeoutMs = EXECUTABLE_TEMPLATE_TIMEOUT_MS,
): Promise<string> {
  // Loaded on the first executable template, with child_process: most trees have none.
  const { runProcess } = await import('../util/process-group.js');
  // Own process group (the default), so a timeout kills the script's children too (they would otherwise hold the
  // pipes open). Output past the cap kills it: a body cut short is no body.
  const result = await runProcess({
    file,
    input: pythonJsonDumps(metadata),
    timeoutMs,
    timeoutSignal: 'SIGKILL',
    maxBufferBytes: MAX_OUTPUT_BYTES,
    overflow: 'kill',
  });
  if (result.spawnError !== undefined)
    throw new TemplateError(
      `config script failed: ${file} could not be started (${result.spawnError.message}); check its shebang line`,
    );
  if (result.exitCode === 0 && !result.timedOut && !result.overflowed) return result.stdout;
  const why = result.timedOut
    ? `did not finish within ${Math.round(timeoutMs / 1000)} s and was killed`
    : result.overflowed
      ? `produced more than ${MAX_OUTPUT_BYTES} bytes of output and was killed`
      : result.signal !== null
        ? `was killed by ${result.signal}`
        : `exited with status ${result.exitCode}`;
  throw new TemplateError(`config script failed: ${file} ${why}; output: ${truncate(result.stdout + result.stderr)}`);
}

function truncate(text: string): string {
  const limit = 2000;
  return JSON.stringify(text.length > limit ? `${text.slice(0, limit)}...` : text);
}
