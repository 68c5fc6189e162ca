import { errorMessage } from '../errors.js';
import type { HookLog } from '../hooks/kit/hook-log.js';
import { redactShellCommand } from '../log/redact-command.js';
import { runProcess } from '../util/process-group.js';
import type { HupHook } from './hup-config.js';
import { userAccount } from './user-account.js';

// A cfn-hup hook's action: `/bin/sh -c ACTION` as the runas user (heat-cfntools ran it through the shell too, with
// its effective uid switched), in a process group of its own, killed with everything it started when it outlives the
// hook's timeout or the agent stops. Its output goes to the log; whatever happens is reported, never thrown: an
// action must not stop cfn-hup.

export interface ActionOutcome {
  readonly hook: string;
  readonly ok: boolean;
  /** The exit status, or why there is none (timed out, killed, no such user). */
  readonly status: string;
}

const OUTPUT_LOG_BYTES = 4096;

export async function runHookAction(
  hook: HupHook,
  event: string,
  env: NodeJS.ProcessEnv,
  log: HookLog,
  signal?: AbortSignal,
): Promise<ActionOutcome> {
  const fields = { hook: hook.name, event, resource: hook.resource, runas: hook.runas };
  let account;
  try {
    account = await userAccount(hook.runas);
  } catch (err) {
    account = undefined;
    log.error('cannot look up the runas user', { ...fields, reason: errorMessage(err) });
  }
  if (!account) {
    log.error('hook action not run: the runas user does not exist', fields);
    return { hook: hook.name, ok: false, status: `no user ${hook.runas}` };
  }
  const switchUser = process.getuid?.() !== account.uid;
  log.info('running hook action', { ...fields, action: redactShellCommand(hook.action) });
  const res = await runProcess({
    file: '/bin/sh',
    args: ['-c', hook.action],
    env: { ...env, HOME: account.home, USER: account.name, LOGNAME: account.name },
    cwd: '/',
    timeoutMs: hook.timeoutSeconds * 1000,
    ownGroup: true,
    ...(switchUser ? { uid: account.uid, gid: account.gid } : {}),
    ...(signal ? { signal } : {}),
  });
  const output = {
    stdout: res.stdout.slice(-OUTPUT_LOG_BYTES),
    stderr: res.stderr.slice(-OUTPUT_LOG_BYTES),
  };
  if (res.spawnError) {
    log.error('hook action could not start', { ...fields, reason: res.spawnError.message });
    return { hook: hook.name, ok: false, status: res.spawnError.code };
  }
  if (res.timedOut) {
    log.error('hook action timed out and was killed', { ...fields, seconds: hook.timeoutSeconds, ...output });
    return { hook: hook.name, ok: false, status: 'timed out' };
  }
  if (res.exitCode !== 0) {
    const status = res.exitCode === null ? `killed by ${res.signal ?? 'a signal'}` : `status ${res.exitCode}`;
    log.error('hook action failed', { ...fields, status, ...output });
    return { hook: hook.name, ok: false, status };
  }
  log.info('hook action succeeded', { ...fields, ...output });
  return { hook: hook.name, ok: true, status: 'status 0' };
}
