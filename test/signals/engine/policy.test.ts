import t from 'tap';
import { signalPolicyFor } from '../../../src/signals/engine/policy.js';
import { deployConfig } from '../../helpers/deploy-fixtures.js';

// The one policy of every signal, from the configuration.

t.test('built from [deploy] signal_* and [zaqar] use_websockets; at least one attempt', async (t) => {
  const loaded = await deployConfig(t.testdir(), {
    deploy: { signal_timeout: 7, signal_max_backoff: 90, signal_max_attempts: 0 },
    zaqar: { use_websockets: true },
  });
  const policy = signalPolicyFor(loaded.config);
  t.match(policy, { timeoutSeconds: 7, maxBackoffSeconds: 90, maxAttempts: 1, zaqarWebsockets: true });
  t.equal(policy.now, Date.now);
  t.equal(policy.random, Math.random);
  t.equal(policy.signal, undefined);
});

t.test('the clock, the jitter and the shutdown signal can be given', async (t) => {
  const loaded = await deployConfig(t.testdir());
  const controller = new AbortController();
  const policy = signalPolicyFor(loaded.config, { now: () => 5, random: () => 0.25, signal: controller.signal });
  t.same([policy.now(), policy.random(), policy.signal], [5, 0.25, controller.signal]);
  t.equal(policy.maxAttempts, loaded.config.deploy.signal_max_attempts);
});
