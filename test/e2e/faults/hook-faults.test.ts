import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { installHooks } from '../../helpers/deploy-fixtures.js';
import { startOrchestrator } from '../../helpers/orchestrator/orchestrator.js';
import {
  killTree,
  pidAlive,
  prepareRoot,
  startDaemon,
  statusKb,
  stopDaemon,
  until,
} from '../../helpers/fault-daemon.js';

// Hooks misbehave under the running daemon: one hangs (with a grandchild in its process group), one dies from
// SIGSEGV, one SIGKILLs itself, one prints 10 MB to stdout and to stderr and exits 2. Each produces exactly one failure signal;
// the hang is cut at [deploy] hook_timeout with its whole group; the big output is signalled as its tail within
// Heat's size limit; the daemon stays up with bounded memory and still runs a good deployment afterwards.

const SIGNAL_LIMIT = 950_000;
/** Peak RSS allowed to the daemon while 2 x 10 MB of hook output pass through it. */
const MAX_PEAK_RSS_MB = 250;

t.test('hanging, crashing and flooding hooks', async (t) => {
  const o = await startOrchestrator({ transport: 'POLL_SERVER_CFN' });
  t.teardown(() => o.close());
  const dir = t.testdir();
  const counter = path.join(dir, 'runs.txt');
  const grandchild = path.join(dir, 'grandchild.pid');
  const ids = {
    hang: o.addDeployment({
      name: 'hang',
      group: 'fake',
      config: { counter, hang: true, grandchildPidFile: grandchild },
    }),
    segv: o.addDeployment({
      name: 'segv',
      group: 'fake',
      config: { counter, stderr: 'about to crash', kill: 'SIGSEGV' },
    }),
    killed: o.addDeployment({ name: 'killed', group: 'fake', config: { counter, kill: 'SIGKILL' } }),
    flood: o.addDeployment({
      name: 'flood',
      group: 'fake',
      config: { counter, bigStdoutBytes: 10_000_000, bigStderrBytes: 10_000_000, exit: 2 },
    }),
  };
  const root = prepareRoot(dir, o, {
    confd: '[deploy]\nhook_timeout = 1\nsignal_timeout = 5\n',
  });
  installHooks(root, { fake: {} });
  const d = startDaemon(root);
  t.teardown(async () => {
    if (d.alive()) await killTree(d);
  });
  const signalsFor = (id: string) => o.signals.filter((s) => s.deploymentId === id);
  await until('every faulty hook signalled', () => Object.values(ids).every((id) => signalsFor(id).length > 0), 60_000);
  const peakRssMb = statusKb(d.pid, 'VmHWM') / 1024;

  const good = o.addDeployment({
    name: 'good',
    group: 'fake',
    config: { counter, stdout: { deploy_stdout: 'fine', deploy_status_code: 0 } },
  });
  await until('the good deployment signalled', () => signalsFor(good).length > 0);
  const polls = o.requests.cfn ?? 0;
  await until('three more polls', () => (o.requests.cfn ?? 0) >= polls + 3);

  for (const [name, id] of Object.entries(ids)) {
    const sigs = signalsFor(id);
    t.equal(sigs.length, 1, `${name}: exactly one signal`);
    t.not(String(sigs[0]?.body.deploy_status_code), '0', `${name}: the signal reports a failure`);
  }
  t.equal(Number(signalsFor(good)[0]?.body.deploy_status_code), 0, 'a good deployment afterwards succeeds');
  t.equal(signalsFor(good).length, 1, 'good: exactly one signal');

  const hang = signalsFor(ids.hang)[0]!.body;
  t.match(
    String(hang.deploy_stderr),
    /did not finish within 1 s; its process group was killed/,
    'the hang is reported as a timeout',
  );
  t.equal(Number(hang.deploy_status_code), 124, 'with the timeout status');
  t.ok(existsSync(grandchild), 'the hanging hook started a grandchild');
  const gpid = Number(readFileSync(grandchild, 'utf8'));
  await until('grandchild gone', () => !pidAlive(gpid), 10_000).catch(() => undefined);
  t.notOk(pidAlive(gpid), "the timeout killed the hook's whole process group");
  t.ok(
    d.lines.some((l) => l.msg === 'hook timed out; process group killed; failure signalled'),
    'the timeout is logged',
  );

  t.match(JSON.stringify(signalsFor(ids.segv)[0]!.body), /SIGSEGV/, 'the crash names its signal');
  t.match(JSON.stringify(signalsFor(ids.killed)[0]!.body), /SIGKILL/, 'the self-kill names its signal');

  const flood = signalsFor(ids.flood)[0]!.body;
  const floodSize = Buffer.byteLength(JSON.stringify(flood));
  t.ok(floodSize <= SIGNAL_LIMIT, `the flood signal fits Heat's limit (${floodSize} bytes)`);
  t.ok(floodSize > SIGNAL_LIMIT / 2, 'and keeps as much output as fits');
  t.match(String(flood.deploy_stderr), /END-OF-OUTPUT$/, 'stderr is trimmed to its tail');
  t.ok(peakRssMb < MAX_PEAK_RSS_MB, `daemon peak RSS stayed bounded (${peakRssMb.toFixed(0)} MB)`);
  t.comment(`hook-faults ${JSON.stringify({ floodSignalBytes: floodSize, peakRssMb: Math.round(peakRssMb) })}`);

  const runs = readFileSync(counter, 'utf8').split('\n').filter(Boolean);
  t.equal(runs.length, 5, 'each hook ran exactly once');
  t.ok(d.alive(), 'daemon alive');
  t.same(await stopDaemon(d), { code: 0, signal: null }, 'SIGTERM exits 0');
});
