import t from 'tap';
import { DeployLockedError, DeploymentsInputError, DeploymentStateError, stateError } from '../../src/state/errors.js';
import { AgentError } from '../../src/errors.js';

// The runner's error classes carry codes from the catalog (docs/troubleshooting.md § Error codes).

t.test('codes, names and causes', async (t) => {
  const cause = Object.assign(new Error('disk full'), { code: 'ENOSPC' });
  const state = stateError('write', '/var/lib/x.json', cause);
  t.ok(state instanceof DeploymentStateError && state instanceof AgentError);
  t.equal(state.code, 'ERR_DEPLOYMENT_STATE');
  t.equal(state.message, "cannot write /var/lib/x.json: ENOSPC; check the disk and the directory's permissions");
  t.equal(state.cause, cause);
  t.equal(stateError('read', 'f', 'odd').message, "cannot read f: odd; check the disk and the directory's permissions");
  const locked = new DeployLockedError('busy', 42);
  t.equal(locked.code, 'ERR_LOCKED');
  t.equal(locked.holderPid, 42);
  t.equal(locked.name, 'DeployLockedError');
  const input = new DeploymentsInputError('no cache');
  t.equal(input.code, 'ERR_METADATA');
  t.equal(input.name, 'DeploymentsInputError');
});
