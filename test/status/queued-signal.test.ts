import { writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { enqueueSignal } from '../../src/signals/cfn-signal-queue/files.js';
import { signalQueueDir } from '../../src/state/signal-queue-paths.js';
import { formatQueuedSignal, readQueuedSignalDetail, verdictOfQueuedSignal } from '../../src/status/queued-signal.js';
import { EXIT } from '../../src/status/report.js';
import { deployConfig } from '../helpers/deploy-fixtures.js';

// `status <id>` of a cfn-signal queue entry, from real queue files: what it shows, what it never shows, its verdict.

t.test('a pending cfn-signal: where it goes (no signature), what it says (no data), still in progress', async (t) => {
  const loaded = await deployConfig(t.testdir());
  const dir = signalQueueDir(loaded.config);
  const url = 'http://127.0.0.1:1/v1/signal/arn?Signature=s3cr3t-sig&AWSAccessKeyId=AK';
  const text = JSON.stringify({ Status: 'SUCCESS', Reason: 'configured', UniqueId: 'web-1', Data: 'private-data-Zk9' });
  const entry = await enqueueSignal(dir, { kind: 'cfn', url, text }, Date.now());
  const d = await readQueuedSignalDetail(loaded.config, entry.id);
  t.match(d, {
    version: 1,
    signal: { kind: 'cfn-signal', id: entry.id, state: 'pending', attempts: 0 },
    says: { status: 'SUCCESS', reason: 'configured', uniqueId: 'web-1' },
  });
  t.match(d!.signal.to, /^http:\/\/127\.0\.0\.1:1\/v1\/signal\/arn/);
  const shown = `${JSON.stringify(d)}\n${formatQueuedSignal(d!)}`;
  t.notMatch(shown, 's3cr3t-sig', 'the signature is never shown');
  t.notMatch(shown, 'private-data-Zk9', 'the data is never shown');
  t.match(formatQueuedSignal(d!), /^cfn-signal signal \S+\n {2}state: pending {3}to: http:\/\/127\.0\.0\.1:1\//);
  t.match(formatQueuedSignal(d!), /^ {2}says: status SUCCESS, reason configured, unique id web-1$/m);
  t.same(verdictOfQueuedSignal(d!), {
    exitCode: EXIT.waiting,
    reasons: [`cfn-signal signal ${entry.id} is not delivered yet (0 attempts)`],
  });
});

t.test(
  'settled: failed for good is exit 2 with its error, sent is 0; unknown, unsafe or damaged ids are not found',
  async (t) => {
    const loaded = await deployConfig(t.testdir());
    const dir = signalQueueDir(loaded.config);
    const entry = await enqueueSignal(
      dir,
      { kind: 'native', url: 'http://127.0.0.1:1/v1/wc', text: '{"status":"FAILURE"}', token: 'tok-secret-Q3' },
      Date.now(),
    );
    const file = path.join(dir, `${entry.id}.json`);
    const settle = (extra: Record<string, unknown>) =>
      writeFileSync(
        file,
        JSON.stringify({
          version: 1,
          id: entry.id,
          kind: 'native',
          shownUrl: entry.shownUrl,
          createdAt: entry.createdAt,
          updatedAt: entry.createdAt,
          attempts: 3,
          ...extra,
        }),
      );
    settle({ state: 'failed', lastStatus: 404, lastError: 'HTTP 404 from Heat; the answer is final' });
    const failed = await readQueuedSignalDetail(loaded.config, entry.id);
    t.match(failed, { signal: { kind: 'wc-notify', state: 'failed', lastStatus: 404 } });
    t.notOk(failed!.says, 'the body is not kept once settled');
    t.same(verdictOfQueuedSignal(failed!), {
      exitCode: EXIT.agentOrSignalError,
      reasons: [`wc-notify signal ${entry.id} failed for good: HTTP 404 from Heat; the answer is final`],
    });
    settle({ state: 'sent', sentAt: entry.createdAt });
    const sent = await readQueuedSignalDetail(loaded.config, entry.id);
    t.equal(verdictOfQueuedSignal(sent!).exitCode, EXIT.done);
    t.match(formatQueuedSignal(sent!), /sent: \S+/);
    t.equal(await readQueuedSignalDetail(loaded.config, 'no-such-signal'), undefined);
    t.equal(await readQueuedSignalDetail(loaded.config, '../etc/passwd'), undefined, 'a path is not an id');
    writeFileSync(path.join(dir, 'broken.json'), '{"version": 1, "id": "broken"');
    t.equal(await readQueuedSignalDetail(loaded.config, 'broken'), undefined, 'a damaged entry is not shown');
  },
);
