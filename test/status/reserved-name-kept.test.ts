import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { loadConfig } from '../../src/config/load.js';
import { Agent } from '../../src/daemon/agent.js';
import type { HttpClient } from '../../src/http/types.js';
import { readReport } from '../../src/status/report.js';
import { EXIT, verdictOf } from '../../src/status/verdict.js';
import { makeAgentRoot, recordingCommand } from '../helpers/agent-root.js';
import { captureLog } from '../helpers/log-capture.js';

// A local file under a reserved name (a collector's) is left out, and its deployments never run until it is renamed:
// `status` reports it (exit 2) with no daemon running, from what the collection left in the state directory, and
// stops once a collection finds the name gone.

const noHttp: HttpClient = { request: () => Promise.reject(new Error('no HTTP here')) };

t.test('a reserved-name clash found by a one-off collection is shown by status with no daemon', async (t) => {
  const dir = t.testdir();
  const cmd = recordingCommand(dir);
  const root = makeAgentRoot(
    path.join(dir, 'root'),
    `[DEFAULT]\ncommand = ${cmd.command}\ncollectors = heat_local\ncollectors = local\n[agent]\nwatch = false\n`,
  );
  const run = async () => {
    const agent = await Agent.create({
      sources: { root: root.root },
      log: captureLog().log,
      mode: 'collect',
      createHttp: () => noHttp,
      strictExit: true,
    });
    return agent.cycle(new AbortController().signal);
  };
  const status = async () => {
    const loaded = await loadConfig({ root: root.root });
    return verdictOf(await readReport(loaded, captureLog().log));
  };
  root.writeHeatLocal({ deployments: [] });
  root.writeLocal('heat_local', { deployments: [{ id: 'd1', name: 'x', group: 'script', config: 'true' }] });
  t.equal((await run()).exitCode, 1, 'the collection reports the clash');

  const verdict = await status();
  t.equal(verdict.exitCode, EXIT.agentOrSignalError, 'status: an error only a person can fix');
  t.match(verdict.reasons, [/^source local: .*"heat_local"/]);
  t.ok(existsSync(path.join(root.root, 'var/lib/os-config-agent/reserved-names.json')), 'kept in the state dir');

  rmSync(path.join(root.localDir, 'heat_local'));
  root.writeLocal('app', { v: 1 });
  t.equal((await run()).exitCode, 0, 'renamed: the collection is clean');
  t.notMatch((await status()).reasons.join('\n'), /reserved|heat_local/, 'status no longer reports it');
  t.notOk(existsSync(path.join(root.root, 'var/lib/os-config-agent/reserved-names.json')), 'the finding is removed');
});
