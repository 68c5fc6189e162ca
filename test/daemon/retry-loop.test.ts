import t from 'tap';
import { RETRY_LOOP_RETRY_MS, RetryLoop, waitFor, type RetryPassResult } from '../../src/daemon/retry-loop.js';
import { captureLog } from '../helpers/log-capture.js';

t.test('waitFor: due time, busy, nothing due', async (t) => {
  t.equal(waitFor({ nextDueAt: 1500 }, 1000, 30_000), 500, 'waits until the next due time');
  t.equal(waitFor({ nextDueAt: 500 }, 1000, 30_000), 0, 'an overdue pass runs at once');
  t.equal(waitFor({ busy: true, nextDueAt: 1001 }, 1000, 30_000), 30_000, 'busy: the retry wait, not the due time');
  t.equal(waitFor({}, 1000, 30_000), 2 ** 31 - 1, 'nothing due: until woken');
  t.equal(waitFor({ nextDueAt: 1e15 }, 0, 30_000), 2 ** 31 - 1, 'never longer than a timer can wait');
  t.equal(RETRY_LOOP_RETRY_MS, 30_000);
});

t.test('passes run when due, when woken, and stop with the signal', async (t) => {
  const { log } = captureLog();
  const controller = new AbortController();
  const calls: number[] = [];
  const results: RetryPassResult[] = [{ nextDueAt: Date.now() + 5 }, {}, {}];
  const holder: { loop?: RetryLoop } = {};
  const pass = async (): Promise<RetryPassResult> => {
    calls.push(calls.length);
    if (calls.length === 2) setTimeout(() => holder.loop?.wake(), 5);
    if (calls.length === 3) controller.abort();
    return results[calls.length - 1] ?? {};
  };
  const loop = new RetryLoop('test', pass, log);
  holder.loop = loop;
  const guard = setTimeout(() => controller.abort(), 5_000);
  await loop.run(controller.signal);
  clearTimeout(guard);
  t.equal(calls.length, 3, 'first pass, the due pass, then the woken pass');
});

t.test('a failing pass is logged and retried; it never rejects', async (t) => {
  const captured = captureLog();
  const controller = new AbortController();
  let calls = 0;
  const loop = new RetryLoop(
    'outbox',
    async () => {
      calls++;
      if (calls === 1) throw new Error('disk on fire');
      controller.abort();
      return {};
    },
    captured.log,
    { retryMs: 5 },
  );
  const guard = setTimeout(() => controller.abort(), 5_000);
  await loop.run(controller.signal);
  clearTimeout(guard);
  t.equal(calls, 2, 'retried after the failure');
  const line = captured.lines.find((l) => l.msg === 'background work failed; retrying later');
  t.ok(line, 'the failure is logged');
  t.equal(line?.work, 'outbox');
  t.equal(line?.reason, 'disk on fire');
});
