import { readFileSync } from 'node:fs';
import { loadConfig } from '../../src/config/load.js';
import { runDeployments } from '../../src/deploy/dispatch.js';
import { createHttpClient } from '../../src/http/client.js';
import { createLogger } from '../../src/log/logger.js';

// Child process of crash-resume.test.ts (bundled by the test, not a test itself): one deployment pass over a
// metadata file under --root, like `os-config-agent deploy`. With KILL_AT=N it SIGKILLs itself right after the Nth
// state change reaches the disk, the harshest moment for the state machine. Prints the number of state changes.

const [root, metadataFile, killAt] = process.argv.slice(2) as [
  string | undefined,
  string | undefined,
  string | undefined,
];
if (root === undefined || metadataFile === undefined) {
  // Run directly (e.g. `tap test/deploy`): not a test on its own.
  process.stdout.write('1..0 # SKIP helper process of crash-resume.test.ts\n');
  process.exit(0);
}
const loaded = await loadConfig({ root, configFiles: [], cli: { deploy: { signal_timeout: 2 } } });
const deployments = JSON.parse(readFileSync(metadataFile, 'utf8')) as unknown[];
let transitions = 0;
const report = await runDeployments({
  config: loaded.config,
  paths: loaded.paths,
  log: createLogger({ level: 'fatal', destination: 'stderr' }),
  http: createHttpClient({ defaultMaxBytes: 1 << 20, defaultRetries: 0 }),
  signal: new AbortController().signal,
  deployments,
  onTransition: () => {
    transitions++;
    if (String(transitions) === killAt) process.kill(process.pid, 'SIGKILL');
  },
});
process.stdout.write(JSON.stringify({ transitions, ran: report.ran, pending: report.signals.pending }));
