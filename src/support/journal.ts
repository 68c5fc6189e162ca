import { runProcess } from '../util/process-group.js';

// The agent's journal for a support bundle: this boot's and the one before (a deployment that rebooted the machine
// lives in both), the newest lines when there are many, with timestamps. Where there is no journal (no systemd, no
// journalctl), the bundle says so instead.

const MAX_LINES = 20000;
const TIMEOUT_MS = 30_000;

export interface JournalText {
  readonly text: string;
  /** Why there is no journal, when there is none. */
  readonly missing?: string;
}

export async function readJournal(unit: string, env: NodeJS.ProcessEnv): Promise<JournalText> {
  const parts: string[] = [];
  for (const boot of ['-1', '0']) {
    const res = await runProcess({
      file: 'journalctl',
      args: [
        '--no-pager',
        '--output',
        'short-iso-precise',
        '--unit',
        unit,
        '--boot',
        boot,
        '--lines',
        String(MAX_LINES),
      ],
      env,
      timeoutMs: TIMEOUT_MS,
    });
    if (res.spawnError) return { text: '', missing: `journalctl could not be run (${res.spawnError.code})` };
    // The boot before may not exist (a first boot, a volatile journal): that is no error.
    if (res.exitCode !== 0 && boot === '-1') continue;
    if (res.exitCode !== 0)
      return { text: parts.join(''), missing: `journalctl failed (exit ${res.exitCode}): ${res.stderr.trim()}` };
    parts.push(`# journalctl --unit ${unit} --boot ${boot}\n${res.stdout}`);
  }
  return { text: parts.join('') };
}
