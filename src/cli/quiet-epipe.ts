// Data (not logs) that commands print on stdout: `collect --print`, `os-apply-config --key`, `status`, ...
//
// process.stdout is created here, on first use, and nowhere at start-up: creating it switches a pipe or socket on fd
// 1 to non-blocking mode, and that flag belongs to the open file description, shared with every process that
// inherited it (under systemd, journald's socket is the daemon's stdout and stderr, and its children's). Synchronous
// log writes to such a descriptor then fail with EAGAIN when the reader lags: pino's writer sleeps 100 ms per retry,
// and a Python child raises BlockingIOError. Processes that never print data keep their descriptors as they got them.

let quiet = false;

/** Write `text` to stdout; a closed stdout (e.g. `| head`) then ends the process quietly. */
export function printData(text: string): void {
  if (!quiet) {
    endQuietlyOnEpipe();
    quiet = true;
  }
  process.stdout.write(text);
}

/** A closed stdout (e.g. `| head`) ends the process quietly instead of with an EPIPE stack trace. */
export function endQuietlyOnEpipe(): void {
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  });
}
