import { isatty } from 'node:tty';
import type { DestinationStream } from 'pino';
import { isJournalStream, priorityOf } from './journal.js';
import { LineSink } from './line-sink.js';
import { textLine } from './text-line.js';

// Where a logger's lines go on a descriptor, in the form the reader wants: JSON (one object a line) for journald,
// files and programs, text for a person at a terminal, and on journald's stream each line led by its syslog priority
// ("<4>") so that `journalctl -p warning` works. The format can change once the configuration is read.

export type LogFormat = 'json' | 'text';

export class LogOutput implements DestinationStream {
  /** Whether each line is led by its syslog priority: the descriptor is journald's stream. */
  readonly journal: boolean;
  /** A person reads this descriptor: text is the default there. */
  readonly terminal: boolean;
  format: LogFormat;

  constructor(
    readonly sink: LineSink,
    fd: number,
    env: NodeJS.ProcessEnv = process.env,
    isTerminal: (fd: number) => boolean = defaultIsTerminal,
  ) {
    this.journal = isJournalStream(fd, env);
    this.terminal = !this.journal && isTerminal(fd);
    this.format = this.terminal ? 'text' : 'json';
  }

  /** The configured format (`[agent] log_format`); unset keeps the default of this descriptor. */
  setFormat(format: LogFormat | undefined): void {
    this.format = format ?? (this.terminal ? 'text' : 'json');
  }

  write(line: string): void {
    const shown = this.format === 'text' ? textLine(line) : line;
    this.sink.write(this.journal ? `<${priorityOf(line)}>${shown}` : shown);
  }

  flush(cb?: (err?: Error | null) => void): void {
    this.sink.flush(cb);
  }
}

function defaultIsTerminal(fd: number): boolean {
  return isatty(fd);
}
