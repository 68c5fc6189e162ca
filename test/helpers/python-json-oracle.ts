import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

// Python's json as an oracle: one python3 process per test file answers "what does json.dumps(json.loads(text))
// print", so a test can check the agent against Python on thousands of generated documents at the cost of one start.

const SCRIPT = fileURLToPath(new URL('../fixtures/python/json-oracle.py', import.meta.url));

export type OracleAnswer = { ok: string } | { error: string };

export interface PythonJsonOracle {
  /** Python's json.dumps(json.loads(text), indent=indent), or the class of the error json.loads raised. */
  roundTrip(text: string, indent?: number): Promise<OracleAnswer>;
  close(): void;
}

export function startPythonJsonOracle(): PythonJsonOracle {
  const child: ChildProcessWithoutNullStreams = spawn('python3', [SCRIPT], { stdio: ['pipe', 'pipe', 'pipe'] });
  const lines = createInterface({ input: child.stdout });
  const waiting: Array<(answer: OracleAnswer) => void> = [];
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  lines.on('line', (line) => waiting.shift()?.(JSON.parse(line) as OracleAnswer));
  child.on('exit', () => {
    for (const w of waiting.splice(0)) w({ error: `the oracle exited: ${stderr.slice(-500)}` });
  });
  return {
    roundTrip(text, indent) {
      return new Promise((resolve) => {
        waiting.push(resolve);
        // The request itself is plain JSON (the text is a string in it): JSON.stringify escapes lone surrogates.
        child.stdin.write(`${JSON.stringify({ text, indent: indent ?? null })}\n`);
      });
    },
    close() {
      child.stdin.end();
    },
  };
}
