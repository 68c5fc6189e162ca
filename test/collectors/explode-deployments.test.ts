import t from 'tap';
import { explodeDeployments } from '../../src/collectors/explode-deployments.js';
import { captureLog } from '../helpers/log-capture.js';

const dep = (over: Record<string, unknown>) => ({ id: 'id', inputs: [], outputs: [], options: {}, ...over });

t.test('os-apply-config, Heat::Ungrouped and unset groups are exploded; other groups are not', async (t) => {
  const { log, lines } = captureLog();
  const document = {
    deployments: [
      dep({ name: 'dep-oac', group: 'os-apply-config', config: { oac: 1 } }),
      dep({ name: 'dep-script', group: 'script', config: '#!/bin/sh' }),
      dep({ name: 'dep-ungrouped', group: 'Heat::Ungrouped', config: { u: 2 } }),
      dep({ name: 'dep-unset', config: { n: 3 } }),
      dep({ name: 'dep-puppet', group: 'puppet', config: 'class {}' }),
      dep({ name: 'dep-null-group', group: null, config: { z: 1 } }),
    ],
  };
  const pairs = explodeDeployments('request', document, ['deployments'], log);
  t.same(
    pairs.map((p) => p.key),
    ['request', 'dep-oac', 'dep-ungrouped', 'dep-unset'],
    'the collector entry first, then qualifying deployments in order (as os-collect-config explodes them)',
  );
  t.equal(pairs[0]?.value, document, 'the whole document, deployments list kept inside');
  t.same(pairs[1]?.value, { oac: 1 });
  t.same(pairs[2]?.value, { u: 2 });
  t.same(pairs[3]?.value, { n: 3 });
  t.same(lines, [], 'nothing to warn about');
});

t.test('deployment keys are read in order; absent keys are skipped silently', async (t) => {
  const { log, lines } = captureLog();
  const document = { first: [dep({ name: 'a', config: 1 })], second: [dep({ name: 'b', config: 2 })] };
  const pairs = explodeDeployments('heat', document, ['second', 'absent', 'first'], log);
  t.same(pairs.slice(1), [
    { key: 'b', value: 2 },
    { key: 'a', value: 1 },
  ]);
  t.same(lines, []);
});

t.test('a deployment key that is not a list warns and the document is still emitted', async (t) => {
  const { log, lines } = captureLog();
  const document = { deployments: { name: 'x' } };
  t.same(explodeDeployments('heat', document, ['deployments'], log), [{ key: 'heat', value: document }]);
  t.match(lines, [
    { level: 'warn', deploymentKey: 'deployments', msg: 'deployment key was found but does not contain a list' },
  ]);
});

t.test('a deployment without a name warns and is skipped', async (t) => {
  const { log, lines } = captureLog();
  const document = {
    deployments: [
      dep({ group: 'os-apply-config', config: {} }),
      dep({ name: '', config: {} }),
      dep({ name: null, config: {} }),
      dep({ name: 'ok', config: 'c' }),
    ],
  };
  t.same(explodeDeployments('heat', document, ['deployments'], log).slice(1), [{ key: 'ok', value: 'c' }]);
  t.equal(lines.filter((l) => l.msg === 'no name found for a deployment; skipped').length, 3);
});

t.test('B8 fixed: a qualifying deployment without config is skipped with a warning, not a crash', async (t) => {
  const { log, lines } = captureLog();
  const document = {
    deployments: [
      dep({ name: 'no-config', group: 'os-apply-config' }),
      dep({ name: 'script-no-config', group: 'script' }),
      dep({ name: 'has', config: null }),
    ],
  };
  t.same(
    explodeDeployments('request', document, ['deployments'], log).slice(1),
    [{ key: 'has', value: null }],
    'config: null is a value',
  );
  t.match(lines, [{ level: 'warn', deploymentName: 'no-config', msg: 'deployment has no config; skipped' }]);
  t.equal(lines.length, 1, 'non-qualifying groups need no config');
});

t.test('B7 fixed: names that are not safe file names are skipped with a warning', async (t) => {
  const { log, lines } = captureLog();
  const document = {
    deployments: [
      dep({ name: '../escaped', config: 1 }),
      dep({ name: 'a/b', config: 2 }),
      dep({ name: '.hidden', config: 3 }),
      dep({ name: 7, config: 4 }),
      dep({ name: 'x'.repeat(300), config: 5 }),
      dep({ name: 'fine-name', config: 6 }),
      dep({ name: '../other-group', group: 'script', config: 7 }),
    ],
  };
  t.same(explodeDeployments('heat', document, ['deployments'], log).slice(1), [{ key: 'fine-name', value: 6 }]);
  const warned = lines.filter((l) => l.msg === 'deployment name is not a safe file name; skipped');
  t.same(
    warned.map((l) => l.deploymentName),
    ['../escaped', 'a/b', '.hidden', '7', 'x'.repeat(80)],
    'names are logged truncated; a non-qualifying group is not checked',
  );
});

t.test('entries that are not objects are skipped with a warning', async (t) => {
  const { log, lines } = captureLog();
  const document = { deployments: [null, 5, 'str', ['a'], dep({ name: 'ok', config: 1 })] };
  t.same(explodeDeployments('heat', document, ['deployments'], log).slice(1), [{ key: 'ok', value: 1 }]);
  t.equal(lines.filter((l) => l.msg === 'deployment entry is not an object; skipped').length, 4);
});

t.test('no deployment keys: only the document', async (t) => {
  const { log } = captureLog();
  const document = { deployments: [dep({ name: 'a', config: 1 })] };
  t.same(explodeDeployments('zaqar', document, [], log), [{ key: 'zaqar', value: document }]);
});

t.test('an inherited key name is not a deployment key', async (t) => {
  const { log, lines } = captureLog();
  t.same(explodeDeployments('heat', {}, ['constructor', 'toString', '__proto__'], log), [{ key: 'heat', value: {} }]);
  t.same(lines, []);
});
