// Small assertion helpers shared by the collector and agent tests.

/** The error a promise rejects with (of the type the caller expects); throws when it resolves. */
export async function failure<E extends Error = Error>(p: Promise<unknown>): Promise<E> {
  try {
    await p;
  } catch (err) {
    return err as E;
  }
  throw new Error('expected a failure');
}

/**
 * What `p` settles to (a rejection as its error), or an Error saying it had not settled within `seconds`: a call that
 * would hang (a read of a FIFO) fails its test at once instead of holding it until tap's timeout.
 */
export async function settledWithin(p: Promise<unknown>, seconds: number): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise((resolve) => {
    timer = setTimeout(() => resolve(new Error(`not settled after ${seconds} s`)), seconds * 1000);
  });
  try {
    return await Promise.race([p.catch((e: unknown) => e), late]);
  } finally {
    clearTimeout(timer);
  }
}
