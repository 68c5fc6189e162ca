import { runProcess } from '../../util/process-group.js';
import type { BuiltinHook, HookContext } from '../contract.js';
import { parseHookInput } from '../hook-deployment.js';
import { HookLog } from '../kit/hook-log.js';
import { executeHook } from './execute-hook.js';

// A built-in hook run as its own executable (dist/hooks/<group>), as heat-config runs any hook: the deployment JSON on
// stdin, the result JSON on stdout, heat-config's log lines on stderr. The agent runs the hook in a process group of
// its own; the tool stays in that group, so stopping the hook stops the tool too.

// Signals that end the hook are passed on to the tool, and the hook still reports the tool's result.
const FORWARDED_SIGNALS: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT', 'SIGHUP'];

export async function runStandaloneHook(hook: BuiltinHook): Promise<void> {
  const log = new HookLog(`heat-config-${hook.group}`, (_level, _message, _fields, line) => process.stderr.write(line));
  const ctx: HookContext = {
    env: process.env,
    log,
    // SIGTERM ends this process (no handler while no tool runs); nothing else stops a deployment here.
    signal: new AbortController().signal,
    async spawn(run) {
      let pid: number | undefined;
      const forward = (sig: NodeJS.Signals) => {
        try {
          if (pid !== undefined) process.kill(pid, sig);
        } catch {
          // The tool has already exited.
        }
      };
      for (const sig of FORWARDED_SIGNALS) process.on(sig, forward);
      try {
        return await runProcess({ ...run, ownGroup: false, onSpawn: (p) => (pid = p) });
      } finally {
        for (const sig of FORWARDED_SIGNALS) process.off(sig, forward);
      }
    },
  };
  const { outcome, crashed } = await executeHook(
    hook,
    async () => parseHookInput(await readStdin(), hook.acceptsNoId === true),
    ctx,
  );
  process.stdout.write(JSON.stringify(outcome));
  if (crashed) process.exitCode = 1;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
