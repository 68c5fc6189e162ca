import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { prepareRoot, startDaemon, stopDaemon, until } from '../helpers/fault-daemon.js';
import { startOrchestrator } from '../helpers/orchestrator/orchestrator.js';
import { storeFor } from '../../src/state/store.js';
import { deployConfig } from '../helpers/deploy-fixtures.js';
import { captureLog } from '../helpers/log-capture.js';

// A reboot asked by a script deployment, with the real agent process (the bundle's `run`) against the simulated
// orchestrator. The reboot command is a recording fake (this machine is not rebooted); the test then "reboots": it
// stops the agent, changes the boot id file under --root and starts the agent again. The real container reboot is
// the booted image test's.

t.test(
  'daemon: exit 194, reboot command once, agent restarted in a new boot: the script runs again and is signalled once',
  async (t) => {
    const o = await startOrchestrator({ transport: 'POLL_SERVER_CFN' });
    t.teardown(() => o.close());
    const dir = t.testdir();
    const rebootLog = path.join(dir, 'reboots.log');
    const runs = path.join(dir, 'runs.log');
    const id = o.addDeployment({
      name: 'kernel-update',
      group: 'script',
      config: `#!/bin/sh\necho "run rebooted=\${OS_CONFIG_AGENT_REBOOTED:-0}" >> ${runs}\nif [ -z "$OS_CONFIG_AGENT_REBOOTED" ]; then exit 194; fi\necho "kernel updated"\n`,
    });
    const root = prepareRoot(dir, o, { config: `[deploy]\nreboot_command = echo reboot >> ${rebootLog}\n` });
    const bootId = path.join(root, 'proc/sys/kernel/random/boot_id');
    mkdirSync(path.dirname(bootId), { recursive: true });
    writeFileSync(bootId, '11111111-1111-4111-8111-111111111111\n');
    const lines = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : []);

    const cycles = (d: { lines: Array<Record<string, unknown>> }) =>
      d.lines.filter((l) => l.msg === 'cycle finished').length;
    const before = startDaemon(root, { args: ['--debug'] });
    t.teardown(() => void stopDaemon(before));
    await until('the reboot command', () => lines(rebootLog).length > 0);
    await until('two more polls', () => cycles(before) >= 3);
    await stopDaemon(before);
    // The agent restarted without a reboot (the machine is still going down): nothing is run or rebooted again.
    const restarted = startDaemon(root, { args: ['--debug'] });
    t.teardown(() => void stopDaemon(restarted));
    await until('two polls', () => cycles(restarted) >= 2);
    await stopDaemon(restarted);
    t.same(lines(rebootLog), ['reboot'], 'reboot command run once');
    t.same(lines(runs), ['run rebooted=0']);
    t.equal(o.signals.filter((s) => s.deploymentId === id).length, 0, 'no signal before the reboot');
    const loaded = await deployConfig(root);
    const store = storeFor(loaded.config, captureLog('error').log);
    t.equal((await store.read(id))?.state, 'awaiting-reboot');

    writeFileSync(bootId, '22222222-2222-4222-8222-222222222222\n');
    const after = startDaemon(root, { args: ['--debug'] });
    t.teardown(() => void stopDaemon(after));
    await until('the signal after the reboot', () => o.signals.some((s) => s.deploymentId === id));
    const polls = cycles(after);
    await until('two more polls', () => cycles(after) >= polls + 2);
    const signals = o.signals.filter((s) => s.deploymentId === id);
    t.equal(signals.length, 1, 'signalled exactly once');
    t.equal(Number(signals[0]?.body.deploy_status_code), 0);
    t.match(String(signals[0]?.body.deploy_stdout), 'kernel updated');
    t.same(lines(runs), ['run rebooted=0', 'run rebooted=1'], 'run again once, with OS_CONFIG_AGENT_REBOOTED=1');
    t.same(lines(rebootLog), ['reboot'], 'no second reboot');
    await stopDaemon(after);
    const record = await store.read(id);
    t.match(record, { state: 'signalled', reboots: 1, exitCode: 0 });
  },
);
