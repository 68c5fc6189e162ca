import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { Agent } from '../../src/daemon/agent.js';
import type { AfterCollectHook } from '../../src/pipeline/contract.js';
import { agentStatusPath, type AgentFacts } from '../../src/status/agent-facts.js';
import { captureLog } from '../helpers/log-capture.js';
import { agentDeps, makeAgentRoot, recordingCommand } from '../helpers/agent-root.js';

function readRuns(file: string): Array<{ files: string; mark: string }> {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { files: string; mark: string });
}

function setup(t: { testdir(): string }, extraConfig = '') {
  const dir = t.testdir();
  const cmd = recordingCommand(dir);
  const root = makeAgentRoot(
    path.join(dir, 'root'),
    `[DEFAULT]\ncommand = ${cmd.command}\ncollectors = heat_local\ncollectors = local\n[agent]\nwatch = false\n${extraConfig}`,
  );
  const cache = path.join(root.root, 'var/lib/os-collect-config');
  const captured = captureLog();
  const deps = agentDeps(root, captured.log, { strictExit: true });
  return { dir, cmd, root, cache, captured, deps };
}

t.test('a change runs the command with OS_CONFIG_FILES in collection order, then commits', async (t) => {
  const { cmd, root, cache, deps } = setup(t);
  root.writeHeatLocal({ hello: 'world' });
  root.writeLocal('20-b', { b: 2 });
  root.writeLocal('10-a.json', { a: 1 });
  const agent = await Agent.create(deps());
  const signal = new AbortController().signal;

  // The command inherits the agent's whole environment, plus OS_CONFIG_FILES (upstream's contract).
  process.env.OCA_TEST_MARK = 'inherited-value';
  t.teardown(() => {
    delete process.env.OCA_TEST_MARK;
  });
  const first = await agent.cycle(signal);
  t.equal(first.exitCode, 0);
  t.equal(readRuns(cmd.record)[0]?.mark, 'inherited-value', 'the agent environment reaches the command');
  t.same(first.changedKeys, ['heat_local', '10-a.json', '20-b']);
  const runs = readRuns(cmd.record);
  t.equal(runs.length, 1);
  t.equal(runs[0]?.files, [`${cache}/heat_local.json`, `${cache}/10-a.json.json`, `${cache}/20-b.json`].join(':'));
  t.ok(existsSync(`${cache}/10-a.json.json.last`), 'committed after success');
  t.equal(
    readFileSync(`${cache}/os_config_files.json`, 'utf8'),
    JSON.stringify(runs[0]?.files.split(':')).replace(/","/g, '", "'),
  );

  const second = await agent.cycle(signal);
  t.same(second.changedKeys, [], 'unchanged data: nothing changed');
  t.equal(readRuns(cmd.record).length, 1, 'command not run again');
});

t.test('a failing command commits nothing and is retried next cycle until it succeeds', async (t) => {
  const { cmd, root, cache, deps } = setup(t);
  root.writeLocal('a', { v: 1 });
  const agent = await Agent.create(deps());
  const signal = new AbortController().signal;
  await agent.cycle(signal);
  root.writeLocal('a', { v: 2 });
  writeFileSync(cmd.exitFile, '3');
  const failed = await agent.cycle(signal);
  t.equal(failed.exitCode, 3, 'the command exit status is reported');
  t.same(JSON.parse(readFileSync(`${cache}/a.json.last`, 'utf8')), { v: 1 }, '.last keeps the old data');
  t.same(JSON.parse(readFileSync(`${cache}/a.json`, 'utf8')), { v: 2 }, '.json holds the new data');
  const again = await agent.cycle(signal);
  t.equal(again.exitCode, 3);
  t.equal(readRuns(cmd.record).length, 3, 'retried while failing');
  writeFileSync(cmd.exitFile, '0');
  const ok = await agent.cycle(signal);
  t.equal(ok.exitCode, 0);
  t.same(JSON.parse(readFileSync(`${cache}/a.json.last`, 'utf8')), { v: 2 }, 'committed once the command succeeded');
  t.same(JSON.parse(readFileSync(`${cache}/a.json.orig`, 'utf8')), { v: 1 }, '.orig is the first value ever');
});

t.test('force runs the command without a change', async (t) => {
  const { cmd, root, deps } = setup(t);
  root.writeLocal('a', { v: 1 });
  const agent = await Agent.create(deps());
  const signal = new AbortController().signal;
  await agent.cycle(signal);
  const forced = await agent.cycle(signal, true);
  t.equal(forced.ran, true);
  t.equal(readRuns(cmd.record).length, 2);
});

t.test(
  'a source with bad data keeps its last good files in OS_CONFIG_FILES and fails one-time strict mode',
  async (t) => {
    const { cmd, root, cache, deps, captured } = setup(t);
    root.writeHeatLocal({ h: 1 });
    root.writeLocal('a', { v: 1 });
    const agent = await Agent.create(deps());
    const signal = new AbortController().signal;
    await agent.cycle(signal);
    root.writeLocal('broken', '{not json');
    root.writeHeatLocal({ h: 2 });
    const report = await agent.cycle(signal);
    t.equal(report.exitCode, 1, 'bad input is a failure in strict one-time mode');
    t.match(report.failures, [{ collector: 'local', code: 'ERR_SOURCE_INVALID_DATA' }]);
    const runs = readRuns(cmd.record);
    t.equal(runs.length, 2, 'the heat_local change still ran the command');
    t.equal(runs[1]?.files, `${cache}/heat_local.json:${cache}/a.json`, 'local keeps its last good file');
    t.ok(
      captured.lines.some((l) => l.msg === 'source unavailable' && String(l.reason).includes('broken')),
      'the log names the bad file',
    );
  },
);

t.test('one-time run returns the command status; the compatibility mode ignores bad sources', async (t) => {
  const { root, deps } = setup(t, '');
  root.writeLocal('bad', '[1, 2');
  root.writeHeatLocal({ ok: true });
  const strict = await Agent.create(deps({ sources: { root: root.root, cli: { DEFAULT: { one_time: true } } } }));
  t.equal(await strict.run(new AbortController().signal), 1);
  const lenient = await Agent.create(
    deps({ strictExit: false, sources: { root: root.root, cli: { DEFAULT: { one_time: true, force: true } } } }),
  );
  t.equal(await lenient.run(new AbortController().signal), 0);
});

t.test('an afterCollect hook can reload the configuration and collect again in the same cycle', async (t) => {
  const { root, cmd, cache, deps } = setup(t);
  root.writeHeatLocal({ boot: true });
  root.writeLocal('a', { v: 1 });
  let calls = 0;
  const agent = await Agent.create(
    deps({
      afterCollect: [
        async () => {
          calls++;
          if (calls === 1) {
            root.writeConfig(`[DEFAULT]\ncommand = ${cmd.command}\ncollectors = local\n[agent]\nwatch = false\n`);
            return { reload: true };
          }
          return { reload: false };
        },
      ],
    }),
  );
  const report = await agent.cycle(new AbortController().signal);
  t.equal(calls, 1, 'the hook runs once per collection pass before the reload');
  t.same(report.changedKeys, ['a'], 'the second pass used the new collector list');
  t.same(agent.loaded.config.DEFAULT.collectors, ['local']);
  t.equal(readRuns(cmd.record)[0]?.files, `${cache}/a.json`);
});

t.test(
  'daemon loop: a local change starts a cycle long before the next poll; abort ends the loop with 0',
  async (t) => {
    const { root, cmd, deps } = setup(t);
    root.writeConfig(
      `[DEFAULT]\ncommand = ${cmd.command}\ncollectors = local\nmin_polling_interval = 600\npolling_interval = 600\n[agent]\nwatch = true\nwatch_debounce = 0.02\n`,
    );
    root.writeLocal('a', { v: 1 });
    const agent = await Agent.create(deps());
    const controller = new AbortController();
    const running = agent.run(controller.signal);
    await waitFor(() => readRuns(cmd.record).length === 1, 10_000);
    // Give the watcher a moment to be ready, then change a file: a 600 s poll would never get there in time.
    await new Promise((r) => setTimeout(r, 300));
    for (let i = 0; i < 5; i++) root.writeLocal('a', { v: 2 + i });
    await waitFor(() => readRuns(cmd.record).length >= 2, 10_000);
    await new Promise((r) => setTimeout(r, 300));
    t.equal(readRuns(cmd.record).length, 2, 'a burst of writes coalesced into one cycle');
    controller.abort();
    t.equal(await running, 0);
  },
);

t.test(
  'daemon loop: each cycle publishes the agent status file for `status` (sources, last cycle, next poll)',
  async (t) => {
    const { root, cmd, deps } = setup(t);
    root.writeConfig(
      `[DEFAULT]\ncommand = ${cmd.command}\ncollectors = local\nmin_polling_interval = 1\npolling_interval = 1\n[agent]\nwatch = false\npoll_jitter = 0\n`,
    );
    root.writeLocal('a', { v: 1 });
    const agent = await Agent.create(deps({ strictExit: false }));
    const controller = new AbortController();
    const running = agent.run(controller.signal);
    const file = agentStatusPath(agent.loaded.paths);
    const facts = () => (existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as AgentFacts) : undefined);
    await waitFor(() => facts()?.lastCycle?.result === 'applied', 10_000);
    t.match(facts(), {
      version: 1,
      pid: process.pid,
      mode: 'collect',
      sources: [{ name: 'local', consecutiveFailures: 0 }],
    });
    t.ok(
      Date.parse(facts()!.nextPollAt!) > Date.parse(facts()!.lastCycle!.endedAt),
      'the next poll is after the cycle',
    );
    root.writeLocal('broken', '{not json');
    await waitFor(() => facts()?.sources[0]?.lastErrorCode !== undefined, 10_000);
    t.match(facts()?.sources[0], {
      name: 'local',
      consecutiveFailures: 1,
      lastErrorCode: 'ERR_SOURCE_INVALID_DATA',
      lastError: /broken/,
    });
    t.equal(facts()?.pollingIntervalSeconds, 1);
    controller.abort();
    t.equal(await running, 0);
  },
);

t.test(
  'daemon loop: polling intervals a self-configuration reloads within a cycle apply from the next sleep',
  async (t) => {
    const { root, cmd, deps } = setup(t);
    const configWith = (seconds: number) =>
      `[DEFAULT]\ncommand = ${cmd.command}\ncollectors = local\nmin_polling_interval = ${seconds}\npolling_interval = ${seconds}\n[agent]\nwatch = false\npoll_jitter = 0\n`;
    root.writeConfig(configWith(600));
    root.writeLocal('a', { v: 1 });
    let calls = 0;
    // What the self-config hook does when a deployment rewrites the agent's configuration: reload within the cycle.
    const selfConfig: AfterCollectHook = async () => {
      if (++calls !== 1) return { reload: false };
      root.writeConfig(configWith(1));
      return { reload: true };
    };
    const agent = await Agent.create(deps({ strictExit: false, afterCollect: [selfConfig] }));
    const controller = new AbortController();
    const running = agent.run(controller.signal);
    const file = agentStatusPath(agent.loaded.paths);
    const facts = () => (existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as AgentFacts) : undefined);
    // With the 600 s it started with, no second poll would come before the test's bound.
    await waitFor(() => calls >= 3, 15_000);
    t.equal(facts()?.pollingIntervalSeconds, 1, 'status names the interval in force');
    controller.abort();
    t.equal(await running, 0);
  },
);

async function waitFor(cond: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

t.test(
  'daemon loop and its service manager: ready once the loop is entered, a promise per step, stopping on abort',
  async (t) => {
    const { root, cmd, deps } = setup(t);
    root.writeConfig(
      `[DEFAULT]\ncommand = ${cmd.command}\ncollectors = local\nmin_polling_interval = 600\npolling_interval = 600\n[agent]\nwatch = false\npoll_jitter = 0\nwatchdog_stall = 7\n`,
    );
    root.writeLocal('a', { v: 1 });
    const events: string[] = [];
    let stuck: (() => void) | undefined;
    let cycles = 0;
    // The second cycle hangs in a step that never makes progress: no new promise may be made while it hangs.
    const hang: AfterCollectHook = async (_o, ctx) => {
      if (++cycles === 2)
        await new Promise<void>((resolve) => {
          stuck = resolve;
          ctx.signal.addEventListener('abort', () => resolve(), { once: true });
        });
      return { reload: false };
    };
    const service = {
      ready: () => events.push('ready'),
      progress: (within: number, stall: number) => events.push(`progress ${within} ${stall}`),
      stopping: () => events.push('stopping'),
      close: async () => {
        events.push('close');
      },
    };
    const agent = await Agent.create(deps({ service, afterCollect: [hang] }));
    const controller = new AbortController();
    const running = agent.run(controller.signal);
    await waitFor(() => readRuns(cmd.record).length === 1 && events.length >= 4, 10_000);
    agent.requestReload(); // wakes the loop for the second cycle
    await waitFor(() => stuck !== undefined, 10_000);
    t.same(
      events,
      ['progress 7000 7000', 'ready', 'progress 7000 7000', 'progress 607000 7000', 'progress 7000 7000'],
      'ready before the first cycle; each cycle promises progress within the stall budget, each sleep within its length plus it; the stuck cycle promises nothing more',
    );
    controller.abort();
    t.equal(await running, 0);
    t.same(events.slice(-2), ['stopping', 'close']);
    t.equal(events.filter((e) => e === 'stopping').length, 1, 'STOPPING once');
  },
);
