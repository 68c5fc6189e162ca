// Data (not logs) that commands print on stdout: `collect --print`, `os-apply-config --key`, `status`, ...
//
// process.stdout is created here, on first use, and nowhere at start-up: for a pipe or socket, creating it loads
// Node's stream and socket code at every start, which commands that print no data do not need. (Its blocking mode is
// kept by cli/stdio-blocking.ts.)

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
