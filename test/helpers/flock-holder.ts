import { spawn } from 'node:child_process';
import { bootId } from '../../src/util/process-identity.js';

// Another process holding a lock file with flock(2), as another agent (or upstream's os-refresh-config) would:
// flock(1) without forking, so the process that holds the lock is the one whose pid is returned. With `named`, it
// writes its own identity line into the file, as the agent's locks do.

export interface FlockHolder {
  readonly pid: number;
  /** SIGKILL, and wait until the process (and so its lock) is gone. */
  kill(): Promise<void>;
}

export async function holdFlock(file: string, options: { named?: boolean } = {}): Promise<FlockHolder> {
  const name = options.named ? `echo "$$ $(cut -d' ' -f22 /proc/$$/stat) ${bootId()}" > '${file}'; ` : '';
  const child = spawn('flock', ['--nonblock', '--no-fork', file, 'sh', '-c', `${name}echo held; exec sleep 60`], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const held = await new Promise<boolean>((resolve) => {
    child.stdout.once('data', () => resolve(true));
    void exited.then(() => resolve(false));
  });
  if (!held) throw new Error(`flock(1) could not take ${file}`);
  return {
    pid: child.pid!,
    async kill() {
      child.kill('SIGKILL');
      await exited;
    },
  };
}
