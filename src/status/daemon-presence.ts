import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { AgentConfig } from '../config/options.js';
import { readFileIfExists, writeFileAtomic } from '../util/atomic-write.js';
import { isSameProcess, processStartTicks } from '../util/process-identity.js';

// Whether a daemon is there to deliver queued signals: <state_dir>/daemon.pid holds the pid and start time (clock
// ticks since boot) of the looping agent. The start time is compared too, so a file left by a killed daemon whose pid
// now names another process does not count.

export function daemonPresenceFile(config: AgentConfig): string {
  return path.join(config.agent.state_dir, 'daemon.pid');
}

/** Say this process is the daemon; the returned function takes it back (at shutdown). */
export async function announceDaemon(file: string): Promise<() => Promise<void>> {
  const ticks = processStartTicks(process.pid) ?? '0';
  await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  await writeFileAtomic(file, `${process.pid} ${ticks}\n`, { mode: 0o600 });
  return async () => {
    // Only our own line is removed: a second daemon started by mistake may have replaced it.
    const now = await readFileIfExists(file).catch(() => undefined);
    if (now?.trim() === `${process.pid} ${ticks}`) await fs.rm(file, { force: true }).catch(() => undefined);
  };
}

/** The pid of the running daemon, or undefined when none runs. */
export async function runningDaemon(file: string): Promise<number | undefined> {
  const text = await readFileIfExists(file).catch(() => undefined);
  const [pidText, ticks] = (text ?? '').trim().split(' ');
  const pid = Number(pidText);
  if (!Number.isInteger(pid) || pid <= 0 || ticks === undefined) return undefined;
  return isSameProcess(pid, ticks) ? pid : undefined;
}
