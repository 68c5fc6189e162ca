import { execFileSync } from 'node:child_process';
import { symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import {
  ansibleChanges,
  chefChanges,
  parseChanges,
  puppetChanges,
  RECONVERGE_ENV,
  scriptChanges,
} from '../../../src/hooks/kit/change-report.js';
import { HOOK_MODES, SYSTEM_PATH, hookDirs } from '../hook-process.js';
import { settledWithin } from '../../helpers/assertions.js';

// What a run changed, as each tool says it: puppet's detailed exit codes, ansible's recap or json callback stats,
// chef-client's "resources updated" line, a script's deploy_changed file. Asked for only on a re-run
// (OS_CONFIG_AGENT_RECONVERGE=1): without it a hook's result is upstream's, key for key.

const silentLog = { info() {}, warn() {}, error() {}, debug() {} } as unknown as Parameters<typeof scriptChanges>[1];

t.test("puppet --detailed-exitcodes: 0 nothing, 2 changes, 6 changes and failures, others don't say", async (t) => {
  t.equal(puppetChanges(0), false);
  t.equal(puppetChanges(2), true);
  t.equal(puppetChanges(6), true);
  t.equal(puppetChanges(4), undefined, 'failures only');
  t.equal(puppetChanges(1), undefined);
});

t.test('ansible: the PLAY RECAP changed= counts of every host, or the json callback stats', async (t) => {
  const recap = (a: number, b: number) =>
    [
      'PLAY [localhost] ***',
      'TASK [copy] ***',
      'changed: [localhost]',
      '',
      'PLAY RECAP *********************************************************************',
      `localhost                  : ok=3    changed=${a}    unreachable=0    failed=0    skipped=0    rescued=0    ignored=0`,
      `other                      : ok=1    changed=${b}    unreachable=0    failed=0    skipped=0    rescued=0    ignored=0`,
      '',
    ].join('\n');
  t.equal(ansibleChanges(recap(1, 2)), 3);
  t.equal(ansibleChanges(recap(0, 0)), 0);
  t.equal(
    ansibleChanges('TASK [x] changed=9 in a task name\nPLAY RECAP ***\nlocalhost : ok=1 changed=0'),
    0,
    'only the recap counts',
  );
  t.equal(ansibleChanges('no recap at all'), undefined);
  const json = JSON.stringify({
    plays: [],
    stats: { localhost: { ok: 2, changed: 2, failures: 0 }, db: { ok: 1, changed: 1 } },
  });
  t.equal(ansibleChanges(json), 3, 'json callback');
  t.equal(ansibleChanges(`[WARNING]: some warning\n${json}`), 3, 'json after a warning line');
  t.equal(ansibleChanges(JSON.stringify({ stats: { localhost: { ok: 1, changed: 0 } } })), 0);
  t.equal(ansibleChanges('{ not json'), undefined);
});

t.test('chef-client: the last "Chef (Infra) Client finished, N/M resources updated" line', async (t) => {
  t.equal(chefChanges('Chef Infra Client finished, 2/15 resources updated in 03 seconds\n'), 2);
  t.equal(chefChanges('Chef Client finished, 0/7 resources updated in 01 seconds'), 0);
  t.equal(chefChanges('Cinc Client finished, 1/1 resource updated in 1 seconds'), 1);
  t.equal(
    chefChanges('Chef Client finished, 4/9 resources updated\n...\nChef Infra Client finished, 1/9 resources updated'),
    1,
    'the last line',
  );
  t.equal(chefChanges('Chef Client failed. 0 resources updated'), undefined);
});

t.test("a script's deploy_changed file: true, false or a count; anything else says nothing", async (t) => {
  const dir = t.testdir();
  const outputs = path.join(dir, 'dep-1');
  t.equal(await scriptChanges(outputs, silentLog), undefined, 'no file');
  for (const [text, expected] of [
    ['true\n', true],
    ['False', false],
    [' 3 ', 3],
    ['maybe', undefined],
    ['-1', undefined],
  ] as const) {
    writeFileSync(`${outputs}.deploy_changed`, text);
    t.equal(await scriptChanges(outputs, silentLog), expected, JSON.stringify(text));
  }
  t.equal(parseChanges(2.5), undefined);
  t.equal(parseChanges(null), undefined);
  t.equal(parseChanges(true), true);
});

t.test('a deploy_changed that is a FIFO or a link to a device says nothing, and is not read', async (t) => {
  const dir = t.testdir();
  execFileSync('mkfifo', [path.join(dir, 'fifo.deploy_changed')]);
  symlinkSync('/dev/zero', path.join(dir, 'zero.deploy_changed'));
  for (const name of ['fifo', 'zero']) {
    // Read as before, the FIFO would wait for a writer forever and /dev/zero would fill the memory: bounded here.
    const said = await settledWithin(scriptChanges(path.join(dir, name), silentLog), 10);
    t.equal(said, undefined, name);
  }
});

const SCRIPT = '#!/bin/bash\necho ran\necho true > "$heat_outputs_path.deploy_changed"\n';

for (const mode of HOOK_MODES)
  t.test(`script hook (${mode.name}): deploy_changed only when the agent asks for it`, async (t) => {
    const dirs = hookDirs(t, 'script');
    const env = {
      PATH: SYSTEM_PATH,
      HOME: dirs.home,
      HEAT_SCRIPT_WORKING: dirs.working,
      HEAT_SCRIPT_OUTPUTS: dirs.outputs,
    };
    const dep = { id: 'chg-1', name: 'c', group: 'script', config: SCRIPT, inputs: [], outputs: [], options: {} };
    const upstream = await mode.run('script', dep, { env });
    t.same(Object.keys(upstream.result).sort(), ['deploy_status_code', 'deploy_stderr', 'deploy_stdout']);
    const asked = await mode.run('script', dep, { env: { ...env, [RECONVERGE_ENV]: '1' } });
    t.equal(asked.result.deploy_changed, true);
    t.equal(asked.result.deploy_status_code, 0);
  });
