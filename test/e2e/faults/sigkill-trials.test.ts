import path from 'node:path';
import t from 'tap';
import { startOrchestrator } from '../../helpers/orchestrator/orchestrator.js';
import {
  cachedDeploymentIds,
  counterEvents,
  countingHook,
  countingScript,
  errorLines,
  invalidJsonFiles,
  killTree,
  prepareRoot,
  readRecords,
  seededRandom,
  sleep,
  startDaemon,
  stopDaemon,
  until,
  type Daemon,
} from '../../helpers/fault-daemon.js';

// SIGKILL at random points of whole cycles of the bundled daemon against the simulated orchestrator: collection,
// self-configuration, template rendering, hooks (a slow one among them, and the agent's own script hook run inside
// the daemon, so kills also land while an in-process hook's tool runs), signals. A seeded PRNG picks each kill delay
// (seed printed; OCA_FAULT_SEED replays a run, OCA_FAULT_TRIALS changes the count). Each kill is what systemd does
// when the agent dies: SIGKILL to the agent and to everything it started (the running hook's own process group
// included). After every kill the files on
// disk are checked; after the last one the daemon converges and the invariants are checked:
//   - every deployment is signalled, and twice only inside the documented crash window (Heat accepted the signal,
//     the agent died before its record said so: the repeat carries the same body);
//   - no hook that completed is run again, except inside the other crash window (the hook finished, the agent died
//     before the record left `running`);
//   - every cache and state file always parses; the cached metadata is always one the orchestrator served;
//   - every daemon life was alive when killed, and the last one stops cleanly on SIGTERM.

const TRIALS = Number(process.env.OCA_FAULT_TRIALS ?? 100);
const SEED = Number(process.env.OCA_FAULT_SEED ?? Math.floor(Math.random() * 2 ** 31));
/** Kill delays range over one daemon life: start-up (~0.3 s), a cycle, a slow hook (0.3 s), the signals. */
const MAX_DELAY_MS = 900;
const BATCH_EVERY = 4;

t.test(`SIGKILL at ${TRIALS} seeded random points (seed ${SEED})`, async (t) => {
  t.comment(`seed ${SEED} (replay with OCA_FAULT_SEED=${SEED})`);
  const random = seededRandom(SEED);
  const o = await startOrchestrator({ transport: 'POLL_SERVER_CFN' });
  t.teardown(() => o.close());
  const dir = t.testdir();
  const counter = path.join(dir, 'runs.txt');
  const added: string[] = [];
  const addBatch = (n: number) => {
    added.push(o.addDeployment({ name: `fast-${n}`, group: 'fast', config: {} }));
    added.push(o.addDeployment({ name: `slow-${n}`, group: 'slow', config: {} }));
    // The agent's own script hook, run inside the daemon: kills land during in-process hooks too.
    added.push(o.addDeployment({ name: `script-${n}`, group: 'script', config: countingScript(0.3) }));
  };
  addBatch(0);
  const root = prepareRoot(dir, o, {
    hooks: { fast: countingHook(0), slow: countingHook(0.3) },
    config: '[deploy]\nsignal_timeout = 2\nsignal_max_backoff = 0.5\n[agent]\nhttp_retries = 0\n',
  });
  const env = { COUNTER_FILE: counter };
  const lives: Daemon[] = [];
  t.teardown(async () => {
    for (const d of lives) if (d.alive()) await killTree(d);
  });

  const hookWindow = new Map<string, number>();
  const signalWindow = new Map<string, number>();
  const badFiles: string[] = [];
  const foreignMetadata: string[] = [];
  let deadBeforeKill = 0;
  const delays: number[] = [];

  for (let trial = 0; trial < TRIALS; trial++) {
    if (trial > 0 && trial % BATCH_EVERY === 0) addBatch(trial / BATCH_EVERY);
    const d = startDaemon(root, { env });
    lives.push(d);
    const delay = Math.floor(random() * MAX_DELAY_MS);
    delays.push(delay);
    await sleep(delay);
    if (!d.alive()) deadBeforeKill++;
    await killTree(d);

    // What a crash at this point leaves on disk (a backup copy it cut short is removed by the next life's backup).
    for (const f of invalidJsonFiles(path.join(root, 'var'), { inFlight: true }))
      badFiles.push(`trial ${trial}: ${path.relative(root, f)}`);
    for (const f of ['cfn.json', 'cfn.json.last']) {
      const ids = cachedDeploymentIds(root, f);
      if (ids && ids.some((id) => !added.includes(id))) foreignMetadata.push(`trial ${trial}: ${f}`);
    }
    // Ids whose latest hook run completed (its last counter line is "end").
    const lastEvent = new Map(counterEvents(counter).map((e) => [e.id, e.event]));
    const signalled = new Set(o.signals.map((s) => s.deploymentId));
    for (const [id, r] of readRecords(root)) {
      // The hook completed but the record still says running: the restart will run it again (crash window).
      if (r.state === 'running' && lastEvent.get(id) === 'end') hookWindow.set(id, (hookWindow.get(id) ?? 0) + 1);
      // Heat has the signal but the record still says pending: the restart will send it again (crash window).
      if (r.state === 'done' && r.signal.state === 'pending' && signalled.has(id))
        signalWindow.set(id, (signalWindow.get(id) ?? 0) + 1);
    }
  }

  // Converge: one last life, left to finish every deployment.
  const last = startDaemon(root, { env });
  lives.push(last);
  const deploymentIds = o.deploymentIds();
  await until(
    'every deployment signalled',
    () => deploymentIds.every((id) => o.signals.some((s) => s.deploymentId === id)),
    60_000,
  );
  const polls = o.requests.cfn ?? 0;
  await until('three more polls', () => (o.requests.cfn ?? 0) >= polls + 3);
  const stopped = await stopDaemon(last);

  t.equal(deadBeforeKill, 0, 'every daemon life was running when it was killed');
  t.same(stopped, { code: 0, signal: null }, 'the converged daemon stops cleanly on SIGTERM');
  t.same(badFiles, [], 'every cache and state JSON file parsed after every kill');
  t.same(foreignMetadata, [], 'cached metadata was always a document the orchestrator served');
  t.same(invalidJsonFiles(path.join(root, 'var')), [], 'every JSON file parses at the end');
  t.same(
    cachedDeploymentIds(root, 'cfn.json.last')?.sort(),
    [...deploymentIds].sort(),
    'the last committed metadata is the current one',
  );

  const byId = new Map<string, Array<Record<string, unknown>>>();
  for (const s of o.signals) byId.set(s.deploymentId, [...(byId.get(s.deploymentId) ?? []), s.body]);
  const extraSignals: string[] = [];
  for (const id of deploymentIds) {
    const bodies = byId.get(id) ?? [];
    const allowed = 1 + (signalWindow.get(id) ?? 0);
    if (bodies.length < 1 || bodies.length > allowed)
      extraSignals.push(`${id}: ${bodies.length} signals, ${allowed} allowed`);
    const first = JSON.stringify(bodies[0]);
    if (bodies.some((b) => JSON.stringify(b) !== first))
      extraSignals.push(`${id}: repeated signal differs from the first`);
  }
  t.same(extraSignals, [], 'each deployment signalled exactly once (repeats only in the crash window, identical)');

  const reRuns: string[] = [];
  const events = counterEvents(counter);
  for (const id of deploymentIds) {
    const mine = events.filter((e) => e.id === id);
    const firstEnd = mine.findIndex((e) => e.event === 'end');
    if (firstEnd < 0) continue;
    const startsAfter = mine.slice(firstEnd).filter((e) => e.event === 'start').length;
    if (startsAfter > (hookWindow.get(id) ?? 0)) reRuns.push(`${id}: ${startsAfter} run(s) after completing`);
  }
  t.same(reRuns, [], 'no completed hook ran again (outside the crash window)');

  const records = readRecords(root);
  t.ok(
    deploymentIds.every((id) => records.get(id)?.state === 'signalled'),
    'every record ends signalled',
  );
  const unexpected = lives
    .flatMap((d) => errorLines(d))
    .filter((l) => l.msg !== 'hook interrupted too often; failure signalled');
  t.same(unexpected, [], 'no error logged other than hooks interrupted too often');
  t.ok(
    lives.every((d) => d.lines.some((l) => l.msg === 'agent starting') || d.lines.length === 0),
    'every life that logged started cleanly',
  );
  const finished = lives.flatMap((d) => d.lines.filter((l) => l.msg === 'hook finished'));
  t.ok(
    finished.some(
      (l) => l.inProcess === true && l.deploymentName !== undefined && String(l.deploymentName).startsWith('script-'),
    ),
    'the script deployments ran in-process',
  );
  t.ok(
    finished.some((l) => l.inProcess === false),
    'the shell hooks ran as processes',
  );

  const hookRuns = events.filter((e) => e.event === 'start').length;
  const summary = {
    seed: SEED,
    trials: TRIALS,
    deployments: deploymentIds.length,
    signals: o.signals.length,
    hookRuns,
    hookCrashWindowHits: [...hookWindow.values()].reduce((a, b) => a + b, 0),
    signalCrashWindowHits: [...signalWindow.values()].reduce((a, b) => a + b, 0),
    hooksStartedTwice: [...records.values()].filter((r) => r.hookStarts >= 2).length,
    meanDelayMs: Math.round(delays.reduce((a, b) => a + b, 0) / delays.length),
  };
  t.comment(`sigkill-trials ${JSON.stringify(summary)}`);
});
