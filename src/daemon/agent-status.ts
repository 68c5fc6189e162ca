import { promises as fs } from 'node:fs';
import path from 'node:path';
import { processStartTicks } from '../util/process-identity.js';
import { type AgentFacts, type CycleResult, type SourceFacts } from '../status/agent-facts.js';
import { errorMessage, type ErrorCode } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { scrubText } from '../log/redact.js';

// The daemon's side of `status`: it keeps the facts in memory and publishes them to a file on the runtime directory
// (tmpfs) at the end of a cycle that changed something (its result, a source's state), and every IDLE_REWRITE_MS
// while idle. Deliberately no fsync and no durable-write helper: the file says what a running process
// is doing, a power cut makes it moot, and at 1 s polling an fsync per poll would be a disk write per second.

const MAX_ERROR_CHARS = 300;
/**
 * An idle poll (same result, same sources' state: only times and failure counts moved) rewrites the file at most this
 * often: a write at every poll would be most of what an idle 1 s poll costs (docs/status.md#cost-on-the-idle-daemon).
 */
const IDLE_REWRITE_MS = 30_000;

export type SourceOutcome =
  { readonly ok: true } | { readonly ok: false; readonly code: ErrorCode; readonly message: string };

export class AgentStatusPublisher {
  private readonly sources = new Map<string, SourceFacts>();
  private readonly startedAt: string;
  private readonly startTicks = processStartTicks(process.pid);
  private cycleStartedAt: string | undefined;
  private lastWritten = '';
  private lastGist = '';
  private lastWriteAt = -Infinity;
  private dirReady = false;
  private failing = false;

  constructor(
    private readonly file: string,
    private readonly mode: string,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {
    this.startedAt = this.iso();
  }

  /** A collector's outcome in this pass (not-configured sources are not reported). */
  source(name: string, outcome: SourceOutcome): void {
    const before = this.sources.get(name) ?? { name, consecutiveFailures: 0 };
    if (outcome.ok) {
      // Kept: the last error stays visible after recovery, with its time, until the next one.
      this.sources.set(name, { ...before, lastSuccessAt: this.iso(), consecutiveFailures: 0 });
      return;
    }
    const message = scrubText(outcome.message).replace(/\s+/g, ' ').slice(0, MAX_ERROR_CHARS);
    this.sources.set(name, {
      ...before,
      lastErrorAt: this.iso(),
      lastErrorCode: outcome.code,
      lastError: message,
      consecutiveFailures: before.consecutiveFailures + 1,
    });
  }

  cycleStarted(): void {
    this.cycleStartedAt = this.iso();
  }

  /** The cycle's end, and when the next poll is due: one write of a few hundred bytes to tmpfs. */
  async cycleEnded(
    result: CycleResult,
    exitCode: number,
    nextPollAt: number | undefined,
    pollingIntervalSeconds?: number,
  ): Promise<void> {
    const sources = [...this.sources.values()];
    // What an operator would see change; times and counts alone wait for the idle rewrite.
    const gist = JSON.stringify([
      result,
      exitCode,
      sources.map((s) => [s.name, s.consecutiveFailures > 0, s.lastErrorCode, s.lastError]),
    ]);
    if (gist === this.lastGist && this.now() - this.lastWriteAt < IDLE_REWRITE_MS) return;
    const endedAt = this.iso();
    const facts: AgentFacts = {
      version: 1,
      pid: process.pid,
      ...(this.startTicks !== undefined ? { startTicks: this.startTicks } : {}),
      startedAt: this.startedAt,
      mode: this.mode,
      lastCycle: { startedAt: this.cycleStartedAt ?? endedAt, endedAt, result, exitCode },
      ...(nextPollAt !== undefined ? { nextPollAt: new Date(nextPollAt).toISOString() } : {}),
      ...(pollingIntervalSeconds !== undefined ? { pollingIntervalSeconds } : {}),
      writtenAt: endedAt,
      sources,
    };
    if (await this.publish(`${JSON.stringify(facts)}\n`)) {
      this.lastGist = gist;
      this.lastWriteAt = this.now();
    }
  }

  private async publish(text: string): Promise<boolean> {
    if (text === this.lastWritten) return true;
    const tmp = `${this.file}.${process.pid}.tmp`;
    try {
      if (!this.dirReady) {
        await fs.mkdir(path.dirname(this.file), { recursive: true, mode: 0o700 });
        this.dirReady = true;
      }
      await fs.writeFile(tmp, text, { mode: 0o600 });
      await fs.rename(tmp, this.file);
      this.lastWritten = text;
      if (this.failing) this.log.info({ file: this.file }, 'agent status file written again');
      this.failing = false;
      return true;
    } catch (err) {
      await fs.rm(tmp, { force: true }).catch(() => undefined);
      // Once per spell of failures: `status` then shows older facts, the loop goes on.
      if (!this.failing)
        this.log.warn(
          { file: this.file, reason: errorMessage(err) },
          'cannot write the agent status file; status will show older facts',
        );
      this.failing = true;
      return false;
    }
  }

  private iso(): string {
    return new Date(this.now()).toISOString();
  }
}
