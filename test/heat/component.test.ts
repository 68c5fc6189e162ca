import t from 'tap';
import { parseDeployment, type Deployment } from '../../src/heat/deployment.js';
import { hookNameForGroup, selectComponent } from '../../src/heat/component.js';

// Group -> hook name exactly as upstream sanitises it, and SoftwareComponent selection by deploy_action.

t.test('only Unicode letters and digits, "-" and "_" are kept', async (t) => {
  const cases: Array<[string, string]> = [
    ['script', 'script'],
    ['scr ipt!', 'script'],
    ['Heat::Ungrouped', 'HeatUngrouped'],
    ['docker-cmd', 'docker-cmd'],
    ['json_file', 'json_file'],
    ['../../bin/sh', 'binsh'],
    ['pupp\u00e9t', 'pupp\u00e9t'],
    ['\u0645\u0631\u062d\u0628\u0627', '\u0645\u0631\u062d\u0628\u0627'],
    ['\u00bd\u2163x', '\u00bd\u2163x'],
    ['e\u0301', 'e'],
    ['tab\there\nnl', 'tabherenl'],
    ['\ud83d\ude00emoji', 'emoji'],
    ['', ''],
  ];
  for (const [group, name] of cases) t.equal(hookNameForGroup(group), name, JSON.stringify(group));
});

function dep(raw: Record<string, unknown>): Deployment {
  const p = parseDeployment({ id: 'c1', ...raw });
  if (!p.ok) throw new Error(p.reason);
  return p.deployment;
}

const component = {
  configs: [
    { actions: ['CREATE', 'UPDATE'], tool: 'script', config: '#!/bin/sh\necho create' },
    { actions: ['DELETE'], tool: 'fake', config: { exit: 0 } },
    { actions: ['DELETE'], tool: 'never', config: 'second match is ignored' },
  ],
};

t.test('component: the first config listing the action decides tool and config', async (t) => {
  const create = selectComponent(
    dep({ group: 'component', config: component, inputs: [{ name: 'deploy_action', value: 'UPDATE' }] }),
  );
  t.ok(create.ok);
  if (create.ok) {
    t.equal(create.deployment.group, 'script');
    t.equal(create.deployment.document.config, '#!/bin/sh\necho create');
  }
  const del = selectComponent(
    dep({ group: 'component', config: component, inputs: [{ name: 'deploy_action', value: 'DELETE' }] }),
  );
  t.ok(del.ok && del.deployment.group === 'fake');
  const suspend = selectComponent(
    dep({ group: 'component', config: component, inputs: [{ name: 'deploy_action', value: 'SUSPEND' }] }),
  );
  t.notOk(suspend.ok);
  if (!suspend.ok) t.match(suspend.reason, 'SUSPEND');
});

t.test('component: malformed configs are reported, other groups pass through', async (t) => {
  t.notOk(selectComponent(dep({ group: 'component', config: 'text' })).ok);
  t.notOk(selectComponent(dep({ group: 'component', config: { configs: 'x' } })).ok);
  const noTool = selectComponent(
    dep({ group: 'component', config: { configs: [{ actions: ['CREATE'], config: 1 }] } }),
  );
  t.notOk(noTool.ok);
  if (!noTool.ok) t.match(noTool.reason, 'no tool');
  const plain = dep({ group: 'script', config: 'x' });
  const same = selectComponent(plain);
  t.ok(same.ok && same.deployment === plain);
});
