import t from 'tap';
import { YieldingLoop } from '../../src/daemon/yielding-loop.js';
import { captureLog } from '../helpers/log-capture.js';

// The re-runs' loop gives way to a cycle with new data: hold() stops the pass in progress and waits for it to end,
// no pass starts while held, and release() runs one at once.

async function until(what: string, check: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

t.test('hold stops the pass in progress, none starts while held, release runs one at once', async (t) => {
  const events: string[] = [];
  let passes = 0;
  const loop = new YieldingLoop(
    'test re-runs',
    async (signal) => {
      const n = ++passes;
      events.push(`start ${n}`);
      await new Promise<void>((resolve) => {
        if (signal.aborted) resolve();
        signal.addEventListener('abort', () => resolve(), { once: true });
      });
      events.push(`stopped ${n}`);
      // Due again only when woken: the test decides when passes run.
      return {};
    },
    captureLog().log,
  );
  const shutdown = new AbortController();
  const done = loop.run(shutdown.signal);
  t.teardown(() => shutdown.abort());
  await until('the first pass', () => passes === 1);
  await loop.hold();
  t.same(events, ['start 1', 'stopped 1'], 'hold waited for the pass to end');
  loop.wake();
  await new Promise((resolve) => setTimeout(resolve, 100));
  t.equal(passes, 1, 'no pass while held, even when woken');
  loop.release();
  await until('a pass after release', () => passes === 2);
  shutdown.abort();
  await done;
  t.same(events, ['start 1', 'stopped 1', 'start 2', 'stopped 2']);
});

t.test('a cycle with new data holds the re-runs while its pipeline runs, and releases them after', async (t) => {
  const { runCycle } = await import('../../src/daemon/cycle.js');
  const { deployConfig } = await import('../helpers/deploy-fixtures.js');
  const { mkdirSync, mkdtempSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const root = mkdtempSync(`${tmpdir()}/oca-cycle-`);
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const loaded = await deployConfig(root);
  mkdirSync(loaded.config.DEFAULT.cachedir, { recursive: true, mode: 0o700 });
  const events: string[] = [];
  const background = {
    hold: async () => void events.push('hold'),
    release: () => void events.push('release'),
  };
  const captured = captureLog();
  const host = {
    log: captured.log,
    loaded: () => loaded,
    afterCollect: [],
    strictExit: false,
    collect: async () => ({ pairs: [], files: [], changedKeys: [], failures: [], available: [] }),
    reload: async () => undefined,
    pipeline: () => ({
      name: 'test',
      run: async () => {
        events.push('pipeline');
        throw new Error('the pipeline failed');
      },
    }),
    background: () => background,
    reloadBeforeNextCycle: () => undefined,
  };
  const report = await runCycle(host as never, new AbortController().signal, true);
  t.equal(report.exitCode, 1, 'the pipeline ran and failed');
  t.same(events, ['hold', 'pipeline', 'release'], 'held before the pipeline, released even when it failed');
  events.length = 0;
  await runCycle({ ...host, pipeline: () => undefined } as never, new AbortController().signal, false);
  t.same(events, [], 'a cycle without new data leaves the re-runs alone');
});
