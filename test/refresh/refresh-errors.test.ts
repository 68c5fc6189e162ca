import t from 'tap';
import { AgentError } from '../../src/errors.js';
import {
  LOCKED_EXIT_CODE,
  PhaseFailedError,
  RefreshLockError,
  RefreshLockedError,
} from '../../src/refresh/refresh-errors.js';

t.test('codes and exit statuses as upstream', async (t) => {
  const phase = new PhaseFailedError('phase configure: x exited with status 3', {
    phase: 'configure',
    script: 'x',
    scriptExitCode: 3,
  });
  t.ok(phase instanceof AgentError);
  t.equal(phase.code, 'ERR_PHASE_FAILED');
  t.equal(phase.exitCode, 1, 'child statuses are flattened to 1');
  t.equal(phase.details.scriptExitCode, 3);
  const locked = new RefreshLockedError('/run/x.lock');
  t.equal(LOCKED_EXIT_CODE, 11);
  t.equal(locked.exitCode, 11);
  t.equal(locked.code, 'ERR_LOCKED');
  t.match(locked.message, /\/run\/x\.lock/);
  const broken = new RefreshLockError('cannot open', { cause: new Error('EACCES') });
  t.equal(broken.exitCode, 1);
  t.equal(broken.name, 'RefreshLockError');
});
