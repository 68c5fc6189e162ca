import { startBornNeutral } from '../util/oom-score.js';
import { pythonJsonDumps } from '../util/python-json.js';
import { TemplateError } from './apply-errors.js';

// Executable templates: run with no arguments, the (sub-hashed) metadata as JSON on stdin; stdout is the file body.
// A non-zero exit fails the whole render. Upstream had no time limit; a hung script would stall every later cycle, so
// one is applied here.

const EXECUTABLE_TEMPLATE_TIMEOUT_MS = 10 * 60 * 1000;
const MAX_OUTPUT_BYTES = 64 * 1024 * 1024;

export async function runExecutableTemplate(
  file: string,
  metadata: unknown,
  timeoutMs = EXECUTABLE_TEMPLATE_TIMEOUT_MS,
): Promise<string> {
  // Loaded on the first executable template: most trees have none.
  const { spawn } = await import('node:child_process');
  return new Promise((resolve, reject) => {
    // Own process group, so a timeout kills the script's children too (they would otherwise hold the pipes open).
    const child = startBornNeutral(() => spawn(file, [], { stdio: ['pipe', 'pipe', 'pipe'], detached: true }));
    const killGroup = () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    };
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let size = 0;
    let failure: string | undefined;
    const timer = setTimeout(() => {
      failure = `did not finish within ${Math.round(timeoutMs / 1000)} s and was killed`;
      killGroup();
    }, timeoutMs);
    const collect = (into: Buffer[]) => (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_OUTPUT_BYTES) {
        failure ??= `produced more than ${MAX_OUTPUT_BYTES} bytes of output and was killed`;
        killGroup();
        return;
      }
      into.push(chunk);
    };
    child.stdout.on('data', collect(stdout));
    child.stderr.on('data', collect(stderr));
    // A script that exits without reading stdin makes the write fail with EPIPE; its exit status decides.
    child.stdin.on('error', () => undefined);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(
        new TemplateError(
          `config script failed: ${file} could not be started (${err.message}); check its shebang line`,
          { cause: err },
        ),
      );
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const out = Buffer.concat(stdout).toString('utf8');
      if (failure === undefined && code === 0) {
        resolve(out);
        return;
      }
      const why = failure ?? (signal ? `was killed by ${signal}` : `exited with status ${code}`);
      const err = Buffer.concat(stderr).toString('utf8');
      reject(new TemplateError(`config script failed: ${file} ${why}; output: ${truncate(out + err)}`));
    });
    child.stdin.end(pythonJsonDumps(metadata));
  });
}

function truncate(text: string): string {
  const limit = 2000;
  return JSON.stringify(text.length > limit ? `${text.slice(0, limit)}...` : text);
}
