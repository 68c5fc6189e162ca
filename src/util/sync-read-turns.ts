// Many small local files (records, a deployment's JSON files) are read synchronously: a read through the thread pool
// costs far more in dispatch than the read itself (10,000 records: ~0.15 s this way, seconds one promise at a time).
// A long run of such reads gives the event loop a turn every FILES_PER_TURN files, so timers, signals and the
// watchdog wait a few milliseconds at most.

const FILES_PER_TURN = 200;

/** Call before the i-th read of a run of synchronous reads: every FILES_PER_TURN, a turn of the event loop. */
export async function turnBeforeRead(i: number): Promise<void> {
  if (i > 0 && i % FILES_PER_TURN === 0) await new Promise((resolve) => setImmediate(resolve));
}
