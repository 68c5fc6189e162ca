import { errorMessage } from '../errors.js';
import { fail, type CheckResult } from './check.js';

// Every network check runs against a deadline: its requests get an AbortSignal, and the check's answer is a failure
// at the deadline even if something under it ignores that signal. A stopped or hanging endpoint costs `ms`, no more.

export async function withDeadline(
  id: string,
  ms: number,
  what: string,
  run: (signal: AbortSignal) => Promise<CheckResult>,
): Promise<CheckResult> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<CheckResult>((resolve) => {
    timer = setTimeout(() => {
      controller.abort();
      resolve(
        fail(
          id,
          `${what} did not answer within ${ms / 1000} s`,
          'check that the endpoint is up and reachable from this server, directly or through the proxy in force',
        ),
      );
    }, ms);
  });
  const work = run(controller.signal).catch((err: unknown) =>
    fail(id, `${what}: ${errorMessage(err)}`, 'this is unexpected: run with --debug and report the output'),
  );
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
}
