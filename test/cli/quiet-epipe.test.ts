import t from 'tap';
import { endQuietlyOnEpipe } from '../../src/cli/quiet-epipe.js';

t.test('EPIPE on stdout (a reader such as `head` went away) exits with the exit code so far; other errors are not swallowed', async (t) => {
  const before = process.stdout.listeners('error');
  endQuietlyOnEpipe();
  const added = process.stdout.listeners('error').filter((l) => !before.includes(l));
  t.equal(added.length, 1, 'one listener');
  t.teardown(() => {
    for (const l of added) process.stdout.off('error', l as (err: Error) => void);
  });
  const exits: Array<number | string | null | undefined> = [];
  const realExit = process.exit;
  const savedCode = process.exitCode;
  process.exit = ((code?: number | string | null) => {
    exits.push(code);
  }) as typeof process.exit;
  t.teardown(() => {
    process.exit = realExit;
    process.exitCode = savedCode;
  });
  const listener = added[0] as (err: NodeJS.ErrnoException) => void;
  process.exitCode = 3;
  listener(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
  listener(Object.assign(new Error('write EIO'), { code: 'EIO' }));
  t.same(exits, [3], 'exited once, with the code already set; EIO left to other handlers');
});
