import t from 'tap';
import { groupIntervalSeconds, normaliseGroupIntervals } from '../../src/config/group-intervals.js';
import { loadConfig, type ConfigProblem } from '../../src/config/load.js';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

// [deploy] reconverge_interval: `group:seconds` entries; each bad one is a configuration problem naming it, and left
// out (that group is not re-run by default); a later entry for a group wins.

t.test('entries: comma- or space-separated, on repeated lines; the last for a group wins; 0 is off', async (t) => {
  const problems: ConfigProblem[] = [];
  const values = normaliseGroupIntervals(['puppet:1800, ansible:3600', 'script:90.5', 'puppet:60'], problems);
  t.same(problems, []);
  t.same(values, ['puppet:1800', 'ansible:3600', 'script:90.5', 'puppet:60']);
  t.equal(groupIntervalSeconds(values, 'puppet'), 60);
  t.equal(groupIntervalSeconds(values, 'ansible'), 3600);
  t.equal(groupIntervalSeconds(values, 'chef'), undefined, 'no entry: off');
  t.equal(groupIntervalSeconds([...values, 'ansible:0'], 'ansible'), undefined, 'a later :0 turns it off');
  t.equal(groupIntervalSeconds(normaliseGroupIntervals([''], problems), 'puppet'), undefined, 'empty: off');
});

t.test(
  'an entry that is not group:<0, or plain decimal seconds of at least 60> is a configuration problem naming it; the rest stay',
  async (t) => {
    const problems: ConfigProblem[] = [];
    const values = normaliseGroupIntervals(
      [
        'puppet:often',
        'ansible:-5',
        'chef',
        ':60',
        'salt:',
        'script:120',
        'hiera:0x10',
        'json-file:1',
        'kubelet:0.001',
      ],
      problems,
    );
    t.same(values, ['script:120'], 'only the good entry is kept');
    t.equal(problems.length, 8);
    for (const p of problems) t.match(p, { severity: 'error', section: 'deploy', option: 'reconverge_interval' });
    t.match(problems[0]?.message, /"puppet:often" has an interval that is not a plain decimal number of seconds/);
    t.match(problems[1]?.message, /"ansible:-5" has an interval that is not a plain decimal number/);
    t.match(problems[2]?.message, /"chef" is not group:seconds/);
    t.match(problems[3]?.message, /":60" is not group:seconds/);
    t.match(problems[4]?.message, /"salt:" has an interval that is not/);
    t.match(problems[5]?.message, /"hiera:0x10" has an interval that is not a plain decimal number/);
    t.match(problems[6]?.message, /"json-file:1" has an interval that is below the least interval of 60 seconds/);
    t.match(problems[7]?.message, /"kubelet:0\.001" has an interval that is below/);
    t.match(problems[0]?.message, /ignored \(that group is not re-run by default\)/);
  },
);

t.test('through loadConfig: a bad entry in a file is reported and the agent keeps the good ones', async (t) => {
  const root = t.testdir();
  const file = path.join(root, 'etc/os-collect-config.conf');
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, '[deploy]\nreconverge_interval = puppet:1800, ansible:soon\n');
  const { config, problems } = await loadConfig({ root });
  t.same(config.deploy.reconverge_interval, ['puppet:1800']);
  const problem = problems.find((p) => p.option === 'reconverge_interval');
  t.match(problem, { severity: 'error', section: 'deploy', message: /"ansible:soon"/ });
  const { config: off } = await loadConfig({ root: t.testdir(), configFiles: [] });
  t.same(off.deploy.reconverge_interval, [], 'off by default');
});
