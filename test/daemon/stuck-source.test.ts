import path from 'node:path';
import t from 'tap';
import { Agent } from '../../src/daemon/agent.js';
import { createHttpClient } from '../../src/http/client.js';
import { agentHttpOptions } from '../../src/cli/command-http.js';
import { agentDeps, makeAgentRoot, recordingCommand } from '../helpers/agent-root.js';
import { startHostileServer } from '../helpers/hostile-server.js';
import { captureLog } from '../helpers/log-capture.js';

// One stuck source never holds up the others: a `request` source whose body trickles a byte every 100 ms (it would
// take 60 s) is unavailable at its timeout, and the cycle goes on with the local source's data and runs the command.
// Loopback only: the configuration names no other source.

t.test('a request source trickling its body: unavailable at its timeout, the cycle runs with the rest', async (t) => {
  const server = await startHostileServer({ kind: 'trickle', bytes: 600, everyMs: 100 });
  t.teardown(() => server.close());
  const dir = t.testdir();
  const cmd = recordingCommand(dir);
  const root = makeAgentRoot(
    path.join(dir, 'root'),
    `[DEFAULT]\ncommand = ${cmd.command}\ncollectors = request\ncollectors = local\n` +
      `[request]\nmetadata_url = ${server.url}/meta.json\ntimeout = 0.5\n[agent]\nwatch = false\nhttp_retries = 0\n`,
  );
  const captured = captureLog();
  root.writeLocal('a', { v: 1 });
  const agent = await Agent.create(
    agentDeps(root, captured.log, { strictExit: false })({
      createHttp: (loaded) => createHttpClient(agentHttpOptions(loaded, captured.log)),
    }),
  );
  const report = await agent.cycle(new AbortController().signal);
  t.match(report.failures, [{ collector: 'request', message: /no answer within 0\.5 s .*body included/ }]);
  t.same(report.changedKeys, ['a']);
  t.equal(report.exitCode, 0, 'the command ran on the local data');
  t.ok(server.bodyBytesSent() < 600, 'the request was abandoned before the body ended');
});
