import fs, { readFileSync } from 'node:fs';
import { loadConfig } from '../../src/config/load.js';
import { runDeployments, settleAppliedDeployments } from '../../src/deploy/dispatch.js';
import { createHttpClient } from '../../src/http/client.js';
import { createLogger } from '../../src/log/logger.js';

// Child process of grouped-writes-crash.test.ts (bundled by the test, not a test itself): a deployment pass, then the
// end of the cycle (settleApplied, as a successful cycle ends), over a metadata file under --root. With
// KILL=before:N or KILL=after:N it SIGKILLs itself just before or just after the Nth rename of a state file, which
// puts the kill at every point of the grouped writes: temp files written but none renamed, between two renames of a
// group, all renamed but the directory not yet synced. Prints the number of renames.

const [root, metadataFile, kill] = process.argv.slice(2) as [
  string | undefined,
  string | undefined,
  string | undefined,
];
if (root === undefined || metadataFile === undefined) {
  process.stdout.write('1..0 # SKIP helper process of grouped-writes-crash.test.ts\n');
  process.exit(0);
}
const [when, at] = (kill ?? '').split(':');
let renames = 0;
const killAt = (moment: 'before' | 'after') => {
  if (when === moment && String(renames) === at) process.kill(process.pid, 'SIGKILL');
};
// Small state files are renamed with fs.renameSync, batches with fs.promises.rename; both are looked up at call time.
const rename = fs.promises.rename.bind(fs.promises);
fs.promises.rename = async (from, to) => {
  renames++;
  killAt('before');
  await rename(from, to);
  killAt('after');
};
const renameSync = fs.renameSync.bind(fs);
fs.renameSync = (from, to) => {
  renames++;
  killAt('before');
  renameSync(from, to);
  killAt('after');
};
const loaded = await loadConfig({ root, configFiles: [], cli: { deploy: { signal_timeout: 2 } } });
const ctx = {
  config: loaded.config,
  paths: loaded.paths,
  log: createLogger({ level: 'fatal', destination: 'stderr' }),
  http: createHttpClient({ defaultMaxBytes: 1 << 20, defaultRetries: 0 }),
  signal: new AbortController().signal,
  deployments: JSON.parse(readFileSync(metadataFile, 'utf8')) as unknown[],
};
await runDeployments(ctx);
await settleAppliedDeployments(ctx, { ok: true });
process.stdout.write(JSON.stringify({ renames }));
