import path from 'node:path';
import t from 'tap';
import { Agent } from '../../src/daemon/agent.js';
import type { SignalQueueService } from '../../src/daemon/background-work.js';
import type { Pipeline } from '../../src/daemon/pipeline.js';
import type { AfterCollectHook } from '../../src/pipeline/contract.js';
import { captureLog, type CapturedLog } from '../helpers/log-capture.js';
import { agentDeps, makeAgentRoot } from '../helpers/agent-root.js';

// The daemon loop's sleeps around a signal to Heat, read from its 'sleeping' log lines (what it chose, not how long it
// took). Sources are local files; the pipeline is a recording fake that reports how many signals it sent, as the
// native pipeline does.

function setup(t: { testdir(): string }, option: string) {
  const root = makeAgentRoot(
    path.join(t.testdir(), 'root'),
    `[DEFAULT]\ncollectors = local\nmin_polling_interval = 0.01\npolling_interval = 0.04\n[agent]\nwatch = false\npoll_jitter = 0\nnative_pipeline = true\n${option}`,
  );
  const captured = captureLog();
  return { root, captured, deps: agentDeps(root, captured.log, { mode: 'run' }) };
}

function sleeps(captured: CapturedLog): number[] {
  return captured.lines.filter((l) => l.msg === 'sleeping').map((l) => (l.delayMs as number) / 1000);
}

async function until(cond: () => boolean, signal?: AbortSignal): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!cond() && !signal?.aborted) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Runs the loop where the 4th cycle sees new metadata and its pipeline signals one deployment; the first 8 sleeps. */
async function sleepsAroundACycleThatSignals(t: { testdir(): string }, option: string): Promise<number[]> {
  const { root, captured, deps } = setup(t, option);
  root.writeLocal('a', { v: 1 });
  let collections = 0;
  // After the 3rd collection the metadata changes: the 4th cycle runs the pipeline.
  const changeAfterThird: AfterCollectHook = async () => {
    if (++collections === 3) root.writeLocal('b', { v: 2 });
    return { reload: false };
  };
  let runs = 0;
  const pipeline: Pipeline = { name: 'recording-fake', run: async () => ({ signalled: ++runs === 2 ? 1 : 0 }) };
  const agent = await Agent.create(deps({ afterCollect: [changeAfterThird], nativePipeline: () => pipeline }));
  const controller = new AbortController();
  const running = agent.run(controller.signal);
  await until(() => sleeps(captured).length >= 8);
  controller.abort();
  await running;
  return sleeps(captured).slice(0, 8);
}

t.test(
  'a cycle that signals makes the next three sleeps min_polling_interval, then the sleeps double again',
  async (t) => {
    t.same(await sleepsAroundACycleThatSignals(t, ''), [0.01, 0.02, 0.04, 0.01, 0.01, 0.01, 0.02, 0.04]);
  },
);

t.test('poll_after_signal = false: the upstream sequence, which never shrinks', async (t) => {
  t.same(
    await sleepsAroundACycleThatSignals(t, 'poll_after_signal = false\n'),
    [0.01, 0.02, 0.04, 0.04, 0.04, 0.04, 0.04, 0.04],
  );
});

t.test('a signal the cfn-signal queue delivers ends the sleep and restarts the sequence', async (t) => {
  const { root, captured, deps } = setup(t, '');
  root.writeLocal('a', { v: 1 });
  let sentAt = -1;
  // A recording fake of the queue service: it delivers one signal once the loop sleeps at polling_interval.
  const queue: SignalQueueService = async (ctx, signal) => {
    await until(() => sleeps(captured).slice(-2).join() === '0.04,0.04', signal);
    sentAt = sleeps(captured).length;
    ctx.signalled?.();
    await until(() => false, signal).catch(() => undefined);
  };
  const agent = await Agent.create(deps({ signalQueue: queue }));
  const controller = new AbortController();
  const running = agent.run(controller.signal);
  await until(() => sentAt >= 0 && sleeps(captured).length >= sentAt + 3);
  controller.abort();
  await running;
  // The sleep under way when the signal went out may have been chosen already; the one after it starts again.
  t.ok(
    sleeps(captured)
      .slice(sentAt, sentAt + 2)
      .includes(0.01),
    'back to min_polling_interval after the delivery',
  );
});

t.test('a signal the deployment outbox delivers beside the loop restarts the sequence', async (t) => {
  const { root, captured, deps } = setup(t, '');
  root.writeLocal('a', { v: 1 });
  let sentAt = -1;
  const pipeline: Pipeline = { name: 'recording-fake', run: async () => ({ signalled: 0 }) };
  // A recording fake of the outbox pass: a retried signal goes out once the loop sleeps at polling_interval.
  const outboxPass = async () => {
    if (sentAt < 0 && sleeps(captured).slice(-2).join() === '0.04,0.04') {
      sentAt = sleeps(captured).length;
      return { sent: 1 };
    }
    return { nextDueAt: Date.now() + 5 };
  };
  const agent = await Agent.create(deps({ nativePipeline: () => pipeline, backgroundPass: outboxPass }));
  const controller = new AbortController();
  const running = agent.run(controller.signal);
  await until(() => sentAt >= 0 && sleeps(captured).length >= sentAt + 3);
  controller.abort();
  await running;
  t.ok(
    sleeps(captured)
      .slice(sentAt, sentAt + 2)
      .includes(0.01),
    'back to min_polling_interval after the delivery',
  );
});
