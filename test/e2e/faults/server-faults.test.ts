import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { startOrchestrator, type Fault } from '../../helpers/orchestrator/orchestrator.js';
import {
  CACHE_DIR,
  countingHook,
  invalidJsonFiles,
  levelOf,
  prepareRoot,
  readRecords,
  startDaemon,
  stopDaemon,
  until,
  killTree,
} from '../../helpers/fault-daemon.js';

// The metadata server and the signal endpoint misbehave in turn (connection refused, 500, a hang past the lowered
// timeouts, a body cut short, a body that is not what was asked for) while the daemon runs. The agent keeps the last
// good metadata (a deployment published during the fault is not run until the server recovers), signals wait in the
// outbox and are delivered exactly once after recovery, and the daemon stays up throughout.

const METADATA_FAULTS: Fault[] = ['refuse', '500', 'hang', 'truncate', 'garbage'];
const SIGNAL_FAULTS: Fault[] = ['refuse', '500', 'hang', 'truncate'];

t.test('metadata and signal server faults', async (t) => {
  const o = await startOrchestrator({ transport: 'POLL_SERVER_CFN' });
  t.teardown(() => o.close());
  const dir = t.testdir();
  const counter = path.join(dir, 'runs.txt');
  const first = o.addDeployment({ name: 'first', group: 'fast', config: {} });
  const root = prepareRoot(dir, o, {
    hooks: { fast: countingHook(0) },
    // In conf.d: the agent rewrites its main file from Heat's metadata and would drop a [cfn] timeout there.
    confd: '[cfn]\ntimeout = 1\n[agent]\nhttp_retries = 0\n[deploy]\nsignal_timeout = 1\nsignal_max_backoff = 0.5\n',
  });
  const d = startDaemon(root, { env: { COUNTER_FILE: counter } });
  t.teardown(async () => {
    if (d.alive()) await killTree(d);
  });
  const signalsFor = (id: string) => o.signals.filter((s) => s.deploymentId === id).length;
  await until('first signal', () => signalsFor(first) === 1);
  const cacheFile = path.join(root, CACHE_DIR, 'cfn.json');
  const lastFile = `${cacheFile}.last`;
  await until(
    'first metadata committed',
    () => existsSync(lastFile) && readFileSync(lastFile, 'utf8') === readFileSync(cacheFile, 'utf8'),
  );

  for (const fault of METADATA_FAULTS) {
    await t.test(`metadata server: ${fault}`, async (t) => {
      await until(
        'the previous cycle committed',
        () => readFileSync(lastFile, 'utf8') === readFileSync(cacheFile, 'utf8'),
      );
      const good = readFileSync(cacheFile, 'utf8');
      const goodLast = readFileSync(lastFile, 'utf8');
      const linesBefore = d.lines.length;
      o.fault('cfn', fault);
      const id = o.addDeployment({ name: `during-${fault}`, group: 'fast', config: {} });
      const polls = o.requests.cfn ?? 0;
      await until('three polls during the fault', () => (o.requests.cfn ?? 0) >= polls + 3);
      t.ok(d.alive(), 'daemon alive');
      t.equal(readFileSync(cacheFile, 'utf8'), good, 'cache keeps the last good metadata');
      t.equal(readFileSync(lastFile, 'utf8'), goodLast, 'committed metadata unchanged');
      t.equal(readRecords(root).has(id), false, 'the deployment published during the fault is not seen yet');
      const problems = d.lines.slice(linesBefore).filter((l) => typeof l.code === 'string' && levelOf(l) >= 40);
      t.ok(problems.length > 0, 'the fault is logged with an error code');
      t.match(problems[0], { msg: /source unavailable|collector failed/ }, 'as a source problem');
      o.fault('cfn', undefined);
      await until('the new deployment signalled after recovery', () => signalsFor(id) === 1);
      t.same(invalidJsonFiles(path.join(root, 'var')), [], 'every JSON file parses');
    });
  }

  for (const fault of SIGNAL_FAULTS) {
    await t.test(`signal endpoint: ${fault}`, async (t) => {
      o.fault('cfn-signal', fault);
      const attemptsBefore = o.requests['cfn-signal'] ?? 0;
      const id = o.addDeployment({ name: `signal-${fault}`, group: 'fast', config: {} });
      await until('three refused signal attempts', () => (o.requests['cfn-signal'] ?? 0) >= attemptsBefore + 3);
      t.equal(signalsFor(id), 0, 'nothing recorded while the endpoint fails');
      const record = readRecords(root).get(id);
      t.match(record, { state: 'done', signal: { state: 'pending' } }, 'the signal waits in the outbox');
      t.ok(d.alive(), 'daemon alive');
      o.fault('cfn-signal', undefined);
      await until('delivered after recovery', () => signalsFor(id) === 1);
      await until('recorded as signalled', () => readRecords(root).get(id)?.state === 'signalled');
    });
  }

  const polls = o.requests.cfn ?? 0;
  await until('three more polls', () => (o.requests.cfn ?? 0) >= polls + 3);
  for (const id of o.deploymentIds())
    t.equal(
      signalsFor(id),
      1,
      `deployment ${o.signals.find((s) => s.deploymentId === id)?.name} signalled exactly once`,
    );
  const ran = readFileSync(counter, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('end '));
  t.equal(ran.length, o.deploymentIds().length, 'every hook ran exactly once');
  t.same(await stopDaemon(d), { code: 0, signal: null }, 'SIGTERM exits 0 after all faults');
});
