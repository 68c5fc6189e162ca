// Small assertion helpers shared by the collector and agent tests.

/** The error a promise rejects with; throws when it resolves. */
export async function failure(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a failure');
}
