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
