import type { DestinationStream } from 'pino';

// Log lines on their way to a descriptor's synchronous writer. Normally each line is written at once (one write(2));
// while someone holds the sink, lines are gathered and written in blocks of about 8 KB, and the rest when the last
// hold is released, when the logger is flushed, or when the process exits. A burst of thousands of lines (one per
// rendered file) then costs tens of system calls instead of thousands, each of which wakes the reader (journald).

/** Characters gathered before a held sink writes them (below sonic-boom's 16 KB largest write, for most lines). */
const BLOCK_CHARS = 8192;

export class LineSink implements DestinationStream {
  #holds = 0;
  #parts: string[] = [];
  #chars = 0;

  // `writer` writes each call at once (pino's synchronous destination), so nothing is left behind in it to flush.
  constructor(private readonly writer: DestinationStream) {
    process.once('exit', () => this.#writeHeld());
  }

  write(line: string): void {
    if (this.#holds === 0) {
      this.writer.write(line);
      return;
    }
    this.#parts.push(line);
    this.#chars += line.length;
    if (this.#chars >= BLOCK_CHARS) this.#writeHeld();
  }

  /** Gather lines until the returned release is called (once; holds nest). */
  hold(): () => void {
    this.#holds++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--this.#holds === 0) this.#writeHeld();
    };
  }

  /** Write what is held now (pino's logger.flush()); the hold stays. */
  flush(cb?: (err?: Error | null) => void): void {
    this.#writeHeld();
    cb?.(null);
  }

  #writeHeld(): void {
    if (this.#parts.length === 0) return;
    const block = this.#parts.length === 1 ? (this.#parts[0] as string) : this.#parts.join('');
    this.#parts = [];
    this.#chars = 0;
    this.writer.write(block);
  }
}
