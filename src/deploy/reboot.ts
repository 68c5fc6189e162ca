import type { LoadedConfig } from '../config/load.js';
import type { Logger } from '../log/logger.js';
import { readFileIfExists } from '../util/atomic-write.js';
import { runProcess } from '../util/process-group.js';
import type { PathMapper } from '../util/rooted-path.js';
import type { AgentConfig } from '../config/options.js';
import { errorMessage } from '../errors.js';
import { withDeployLock } from '../state/deploy-lock.js';
import { DeploymentRecordError } from '../state/errors.js';
import { deployLockFile, storeFor, type DeploymentRecord, type StateStore } from '../state/store.js';

// Reboots asked by deployments. A hook (or a heat-config script it runs) exiting with 194 asks for a reboot, AWS
// SSM's convention: the agent records the deployment as awaiting-reboot with the current boot id (before anything
// else happens, so a crash cannot lose it), runs [deploy] reboot_command, and after the boot (a different boot id)
// runs the deployment once more with OS_CONFIG_AGENT_REBOOTED=1; that run's result is the one signalled. A deployment
// asking again and again is failed after MAX_REBOOTS reboots.

export const REBOOT_EXIT_CODE = 194;
/** Reboots one deployment may ask for; one more request is reported as a failure, so a hook cannot loop the machine. */
export const MAX_REBOOTS = 3;
/** Set (to "1") in the environment of a hook run again after the reboot it asked for. */
export const REBOOTED_ENV = 'OS_CONFIG_AGENT_REBOOTED';
/** The kernel's id of the current boot (a new random UUID at every boot); under --root, a file tests can change. */
export const BOOT_ID_FILE = '/proc/sys/kernel/random/boot_id';
/** How long the reboot command may take to return (systemctl reboot returns at once; shutdown then stops the agent). */
const REBOOT_COMMAND_TIMEOUT_MS = 60_000;

/** The current boot id, or undefined when it cannot be read (then reboots cannot be told apart and are refused). */
export async function readBootId(paths: PathMapper): Promise<string | undefined> {
  try {
    const text = await readFileIfExists(paths.map(BOOT_ID_FILE));
    const id = text?.trim();
    return id === undefined || id === '' ? undefined : id;
  } catch {
    return undefined;
  }
}

/**
 * At the agent's start: does a deployment wait for this boot (awaiting-reboot, asked in another boot)? The daemon then
 * runs its first cycle even though the metadata has not changed, so the deployment is finished and signalled.
 */
export async function deploymentsAwaitBoot(loaded: LoadedConfig, log: Logger): Promise<boolean> {
  const waiting = await recordsAwaitingReboot(loaded.config, log);
  if (waiting.length === 0) return false;
  const bootId = await readBootId(loaded.paths);
  const resumed = waiting.filter((r) => bootId === undefined || r.bootId !== bootId);
  if (resumed.length > 0)
    log.info(
      { deployments: resumed.map((r) => r.id) },
      'deployments wait for this boot; running a cycle to finish them',
    );
  return resumed.length > 0;
}

/**
 * The records in awaiting-reboot: those the reboot marks name (src/state/reboot-marks.ts), or, in a state directory
 * without them, every record read, and the marks made from that reading under the deploy lock. Records that cannot
 * be used are left to the deployment pass, which reports them.
 */
async function recordsAwaitingReboot(config: AgentConfig, log: Logger): Promise<DeploymentRecord[]> {
  const store = storeFor(config, log);
  const marked = await store.rebootMarks.ids();
  const awaiting = (records: readonly (DeploymentRecord | undefined)[]) =>
    records.filter((r): r is DeploymentRecord => r?.state === 'awaiting-reboot');
  if (marked !== undefined) return awaiting(await Promise.all(marked.map((id) => readUsable(store, id))));
  try {
    return await withDeployLock(deployLockFile(config), async () => {
      // Read again under the lock, which every move of a record holds: the marks then say what the records say.
      const records = awaiting(await store.list(true));
      if ((await store.rebootMarks.ids()) === undefined) await store.rebootMarks.create(records.map((r) => r.id));
      return records;
    });
  } catch (err) {
    // Held by a runner (another start makes the marks), or the marks cannot be written: read, as before them.
    log.debug({ reason: errorMessage(err) }, 'reboot marks not made; every record read');
    return awaiting(await store.list(true));
  }
}

async function readUsable(store: StateStore, id: string): Promise<DeploymentRecord | undefined> {
  try {
    return await store.read(id);
  } catch (err) {
    if (err instanceof DeploymentRecordError) return undefined;
    throw err;
  }
}

export type RebootOutcome = { readonly ok: true } | { readonly ok: false; readonly reason: string };

/** Runs the reboot command through /bin/sh -c; ok when it exits 0. */
export async function runRebootCommand(command: string, env: NodeJS.ProcessEnv, log: Logger): Promise<RebootOutcome> {
  log.warn({ command }, 'rebooting the machine: a deployment asked for it');
  const result = await runProcess({
    file: '/bin/sh',
    args: ['-c', command],
    env,
    timeoutMs: REBOOT_COMMAND_TIMEOUT_MS,
    maxBufferBytes: 64 * 1024,
  });
  if (result.exitCode === 0) return { ok: true };
  const how = result.spawnError
    ? `could not be started (${result.spawnError.code})`
    : result.timedOut
      ? 'did not return in time'
      : result.signal
        ? `was killed by ${result.signal}`
        : `exited with ${result.exitCode}`;
  const tail = result.stderr.trim().slice(-500);
  return { ok: false, reason: `the reboot command ${how}${tail ? `: ${tail}` : ''}; check [deploy] reboot_command` };
}
