/** A closed stdout (e.g. `| head`) ends the process quietly instead of with an EPIPE stack trace. */
export function endQuietlyOnEpipe(): void {
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  });
}
