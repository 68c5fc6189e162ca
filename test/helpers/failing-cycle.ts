import path from 'node:path';
import { installBuiltinHooks, requireBundle, runProcess, type BundleRun } from './bundle.js';
import { HOOKS_DIR } from './deploy-fixtures.js';
import { makeAgentRoot } from './agent-root.js';

// One cycle of the built daemon (`run --one-time`) on a throw-away root with local sources only (no network at all):
// from heat_local, a script deployment that succeeds, one that exits 1 and one whose hook is missing, none signalled.
// Its log is real log output for the tests of journald's priorities and of the docs' jq recipes.

export const GOOD = 'hello-script';
export const BAD = 'broken-script';
export const NO_HOOK = 'no-hook';

const CONFIG = `[DEFAULT]
collectors = heat_local
collectors = local
command = true
[agent]
native_pipeline = true
config_target =
`;

function scriptDeployment(id: string, name: string, body: string): Record<string, unknown> {
  return {
    id,
    name,
    group: 'script',
    creation_time: '2026-01-01T00:00:00Z',
    config: `#!/bin/sh\n${body}\n`,
    options: {},
    outputs: [],
    inputs: [
      { name: 'deploy_action', type: 'String', value: 'CREATE' },
      { name: 'deploy_signal_transport', type: 'String', value: 'NO_SIGNAL' },
    ],
  };
}

/**
 * Runs the cycle under `root`; `shell` wraps the command line (`sh -c '… exec "$@"'`), to give the agent an
 * environment made from its own stdout, as systemd's $JOURNAL_STREAM is.
 */
export async function runFailingCycle(
  root: string,
  options: { shellPrefix?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<BundleRun> {
  const agentRoot = makeAgentRoot(root, CONFIG);
  installBuiltinHooks(path.join(root, HOOKS_DIR));
  agentRoot.writeHeatLocal({
    deployments: [
      scriptDeployment('11111111-0000-4000-8000-000000000001', GOOD, 'echo hello'),
      scriptDeployment('11111111-0000-4000-8000-000000000002', BAD, 'echo "disk full" >&2; exit 1'),
      { ...scriptDeployment('11111111-0000-4000-8000-000000000003', NO_HOOK, 'true'), group: 'no-such-hook' },
    ],
  });
  const env = { ...process.env, ...options.env };
  // tap's loader hooks are not for the bundle.
  delete env.NODE_OPTIONS;
  const argv = [process.execPath, requireBundle(), 'run', '--root', root, '--one-time'];
  if (options.shellPrefix === undefined) return runProcess(argv[0]!, argv.slice(1), { env, timeoutMs: 60_000 });
  return runProcess('/bin/sh', ['-c', `${options.shellPrefix} exec "$@"`, 'sh', ...argv], { env, timeoutMs: 60_000 });
}
