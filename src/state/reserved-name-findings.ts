import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { AgentConfig } from '../config/options.js';
import { readFileIfExists } from '../util/atomic-write.js';
import { isJsonObject } from '../util/json-merge.js';
import { writeStateFile } from './state-file.js';

// Sources that had an entry under a reserved name left out (ERR_RESERVED_NAME), kept on disk in the state directory:
// the deployments in such an entry never run until it is renamed, so `status` must say so whether or not a daemon
// runs, after it stopped and after a reboot (the daemon's live facts live on tmpfs and only while it runs). Written
// by the pass that commits a collection, only when the findings change; removed when none is left.

export interface ReservedNameFinding {
  readonly source: string;
  /** The error's message (names the key, never a value). */
  readonly error: string;
  /** When it was first found. */
  readonly since: string;
}

/** What this pass learnt of each source: a clash, no clash (collected cleanly), or nothing (failed, not asked). */
export type SourceClash = { readonly clash: string } | { readonly clash: undefined };

export function reservedNameFindingsFile(config: AgentConfig): string {
  return path.join(config.agent.state_dir, 'reserved-names.json');
}

/** The findings on disk; none when the file is absent or unreadable. */
export async function readReservedNameFindings(file: string): Promise<ReservedNameFinding[]> {
  return parseFindings((await readFileIfExists(file).catch(() => undefined)) ?? '');
}

function parseFindings(text: string): ReservedNameFinding[] {
  try {
    const value: unknown = JSON.parse(text);
    if (!isJsonObject(value) || value.version !== 1 || !Array.isArray(value.findings)) return [];
    return value.findings.filter(
      (f): f is ReservedNameFinding =>
        isJsonObject(f) && typeof f.source === 'string' && typeof f.error === 'string' && typeof f.since === 'string',
    );
  } catch {
    return [];
  }
}

/**
 * Merge this pass's outcomes into the findings on disk: a clash is recorded (its first time kept), a clean
 * collection clears it, a source that failed otherwise keeps what was known; sources no longer configured are
 * dropped. Written (or removed) only when that changes the file.
 */
export async function recordReservedNameFindings(
  file: string,
  configured: readonly string[],
  outcomes: ReadonlyMap<string, SourceClash>,
  now: number,
): Promise<void> {
  const current = (await readFileIfExists(file).catch(() => undefined)) ?? '';
  const before = parseFindings(current);
  const kept = new Map(before.filter((f) => configured.includes(f.source)).map((f) => [f.source, f]));
  for (const [source, outcome] of outcomes) {
    if (outcome.clash === undefined) kept.delete(source);
    else
      kept.set(source, {
        source,
        error: outcome.clash,
        since: kept.get(source)?.since ?? new Date(now).toISOString(),
      });
  }
  const findings = [...kept.values()];
  const text = findings.length === 0 ? '' : `${JSON.stringify({ version: 1, findings }, null, 2)}\n`;
  if (text === current) return;
  if (text === '') await fs.rm(file, { force: true });
  else {
    await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
    await writeStateFile(file, text);
  }
}
