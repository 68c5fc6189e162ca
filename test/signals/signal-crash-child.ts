import fs, { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

// Child process of signal-crash.test.ts (bundled by the test, not a test itself). It counts the durable writes under
// the instance root (each atomic write ends in one rename) and, with KILL=before:N or KILL=after:N, SIGKILLs itself
// just before or just after the Nth one. Before dying it notes the write it was about to make or had made in
// <root>/killed.json, so the test knows whether the kill fell in the window between a delivery and its record.
//
//   outbox <root> <metadata.json>       one deployment pass, then outbox flushes until no signal is pending
//   queue <root> <signal.json>          the cfn-signal command's queue write (again when it never reached the disk:
//                                       the command failed, so its caller runs it again), then queue flushes
// Prints the number of durable writes.

const [mode, root, input] = process.argv.slice(2);
if (mode === undefined || root === undefined || input === undefined) {
  process.stdout.write('1..0 # SKIP helper process of signal-crash.test.ts\n');
  process.exit(0);
}
const [when, at] = (process.env.KILL ?? '').split(':');
let writes = 0;
const rename = fs.promises.rename.bind(fs.promises);
const renameSync = fs.renameSync.bind(fs);
/** Counts a write under the root; the kill before it, if this is the one. Returns the after-kill to run. */
const counted = (from: fs.PathLike, to: fs.PathLike): (() => void) => {
  if (!String(to).startsWith(root)) return () => undefined;
  const n = ++writes;
  const note = (moment: string, text: string) => {
    writeFileSync(path.join(root, 'killed.json'), JSON.stringify({ moment, write: n, file: String(to), text }));
    process.kill(process.pid, 'SIGKILL');
  };
  if (when === 'before' && String(n) === at) note('before', readFileSync(from, 'utf8'));
  return () => {
    if (when === 'after' && String(n) === at) note('after', readFileSync(to, 'utf8'));
  };
};
// The modules below read fs.promises.rename and fs.renameSync when they call them (small files are written with
// direct calls, larger ones and batches through the promises), so this sees every atomic write they make.
fs.promises.rename = async (from: fs.PathLike, to: fs.PathLike) => {
  const after = counted(from, to);
  await rename(from, to);
  after();
};
fs.renameSync = (from: fs.PathLike, to: fs.PathLike) => {
  const after = counted(from, to);
  renameSync(from, to);
  after();
};

const { loadConfig } = await import('../../src/config/load.js');
const { createHttpClient } = await import('../../src/http/client.js');
const { createLogger } = await import('../../src/log/logger.js');
const loaded = await loadConfig({ root, configFiles: [], cli: { deploy: { signal_timeout: 2 } } });
const log = createLogger({ level: 'fatal', destination: 'stderr' });
const http = createHttpClient({ defaultMaxBytes: 1 << 20, defaultRetries: 0 });
// Each flush an hour later than the one before, so a signal whose attempt failed is due at once.
const hoursLater = (n: number) => () => Date.now() + n * 3_600_000;

if (mode === 'outbox') {
  const { runDeployments } = await import('../../src/deploy/dispatch.js');
  const { flushOutbox } = await import('../../src/signals/outbox.js');
  const deployments = JSON.parse(readFileSync(input, 'utf8')) as unknown[];
  const signal = new AbortController().signal;
  await runDeployments({ config: loaded.config, paths: loaded.paths, log, http, signal, deployments });
  for (let n = 1; n <= 5; n++) if ((await flushOutbox(loaded, log, http, { now: hoursLater(n) })).pending === 0) break;
} else {
  const { enqueueSignal } = await import('../../src/signals/cfn-signal-queue/files.js');
  const { attemptIfDue, flushSignalQueue, queueDepsFor } = await import('../../src/signals/cfn-signal-queue/send.js');
  const deps = queueDepsFor(loaded.config, http, log);
  const queued = (() => {
    try {
      return readdirSync(deps.dir).filter((n) => n.endsWith('.json'));
    } catch {
      return [];
    }
  })();
  let id = queued[0]?.slice(0, -'.json'.length);
  if (id === undefined) id = (await enqueueSignal(deps.dir, JSON.parse(readFileSync(input, 'utf8')), Date.now())).id;
  // No daemon runs: the command attempts the signal itself once.
  await attemptIfDue(deps, id);
  for (let n = 1; n <= 5; n++) {
    const report = await flushSignalQueue(queueDepsFor(loaded.config, http, log, { now: hoursLater(n) }));
    if (report.pending === 0) break;
  }
}
process.stdout.write(JSON.stringify({ writes }));
