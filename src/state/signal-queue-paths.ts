import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { AgentConfig } from '../config/options.js';
import { stateError } from './errors.js';

// Where the cfn-signal queue lives, apart from its delivery code: the daemon watches the directory from start but
// loads the code that sends (HTTP, backoff, lock) only once a signal is there.

export function signalQueueDir(config: AgentConfig): string {
  return path.join(config.agent.state_dir, 'signals');
}

export function signalQueueLockFile(config: AgentConfig): string {
  return path.join(config.agent.state_dir, 'signals.lock');
}

export async function ensureQueueDir(dir: string): Promise<void> {
  try {
    await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  } catch (err) {
    throw stateError('create the directory', dir, err);
  }
}

/** Whether the directory holds any signal file (pending or settled). */
export async function hasQueuedFiles(dir: string): Promise<boolean> {
  try {
    return (await fs.readdir(dir)).some((n) => n.endsWith('.json') && !n.startsWith('.'));
  } catch {
    return false;
  }
}
