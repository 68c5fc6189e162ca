import { writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { runHook, SYSTEM_PATH } from '../hook-process.js';

// A built-in hook run as its own executable, as heat-agents' tests and hand-run hooks use it: input the agent itself
// never gives (no id, stdin that is not JSON) gets upstream's answer.

t.test(
  'a deployment object without an id: run by the hooks whose upstream never reads one, refused by the others',
  async (t) => {
    const dir = t.testdir();
    const fake = path.join(dir, 'fake-cfn-init');
    writeFileSync(fake, '#!/bin/sh\necho "cfn-init success"\necho "thing happened" >&2\n', { mode: 0o755 });
    const env = { PATH: SYSTEM_PATH, HOME: dir, HEAT_CFN_INIT_CMD: fake, HEAT_CFN_INIT_LAST_METADATA_DIR: dir };
    const cfn = await runHook('cfn-init', { group: 'cfn-init', inputs: [], config: { foo: 'bar' } }, { env });
    t.equal(cfn.code, 0);
    t.same(cfn.result, {
      deploy_stdout: 'cfn-init success\n',
      deploy_stderr: 'thing happened\n',
      deploy_status_code: 0,
    });

    const script = await runHook(
      'script',
      { group: 'script', config: 'true' },
      { env: { PATH: SYSTEM_PATH, HOME: dir } },
    );
    t.equal(script.code, 1, "exit status 1, as upstream's script hook dies on c['id']");
    t.equal(script.result.deploy_status_code, 1);
    t.match(script.result.deploy_stderr, /the deployment has no id/, 'the script hook names its files after the id');

    const empty = await runHook('cfn-init', { id: '', group: 'cfn-init', config: {} }, { env });
    t.match(empty.result.deploy_stderr, /the deployment has no id/, 'an empty id is still refused');
  },
);

t.test(
  'stdin that is not a deployment: a failure result naming the cause, and exit status 1 as upstream',
  async (t) => {
    const dir = t.testdir();
    for (const stdin of ['{::::', '[1, 2]']) {
      const run = await runHook('cfn-init', stdin, { env: { PATH: SYSTEM_PATH, HOME: dir } });
      t.equal(run.code, 1, `${stdin}: exit status 1`);
      t.equal(run.result.deploy_status_code, 1);
      t.match(run.result.deploy_stderr, /stdin is not JSON|not a JSON object/);
    }
  },
);
