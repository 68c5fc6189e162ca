import t from 'tap';
import {
  inputValue,
  parseDeployment,
  secretInputTexts,
  withGroupAndConfig,
  type Deployment,
} from '../../src/heat/deployment.js';
import { scrubText } from '../../src/log/redact.js';
import { deployment } from '../helpers/deploy-fixtures.js';

// Parsing one element of Heat's deployments list: ids that are file names, inputs kept with their JSON types.

function ok(raw: unknown): Deployment {
  const parsed = parseDeployment(raw);
  if (!parsed.ok) throw new Error(parsed.reason);
  return parsed.deployment;
}

// One deployment as a real Heat 19 server delivered it (POLL_SERVER_HEAT + HEAT_SIGNAL; credentials replaced).
const REAL = {
  id: '71156451-ca9c-47b4-8c20-f36f1b33f74d',
  name: 'hello-deployment',
  group: 'script',
  creation_time: '2026-11-22T13:51:54Z',
  config: '#!/bin/sh\necho "hello $who"\n',
  inputs: [
    { name: 'who', description: 'who to greet', type: 'String', default: '', value: 'heat-agent' },
    {
      name: 'deploy_server_id',
      description: 'ID of the server being deployed to',
      type: 'String',
      value: '555e17a4-eb05-4646-bf6b-9a1677b88eab',
    },
    {
      name: 'deploy_action',
      description: 'Name of the current action being deployed',
      type: 'String',
      value: 'CREATE',
    },
    {
      name: 'deploy_stack_id',
      description: 'ID of the stack this deployment belongs to',
      type: 'String',
      value: 'demo-heat/d9632b16-5126-4d4c-9d9c-d391c7426313',
    },
    {
      name: 'deploy_resource_name',
      description: 'Name of this deployment resource in the stack',
      type: 'String',
      value: 'deployment',
    },
    {
      name: 'deploy_signal_transport',
      description: 'How the server should signal to heat with the deployment output values.',
      type: 'String',
      value: 'HEAT_SIGNAL',
    },
    {
      name: 'deploy_auth_url',
      description: 'URL for API authentication',
      type: 'String',
      value: 'http://127.0.0.1:5000/v3/',
    },
    {
      name: 'deploy_user_id',
      description: 'User ID for API authentication',
      type: 'String',
      value: 'a056a913d2624c42a4f6380ddd5c933d',
    },
    { name: 'deploy_password', description: 'Password for API authentication', type: 'String', value: 'REDACTED' },
    {
      name: 'deploy_project_id',
      description: 'ID of project for API authentication',
      type: 'String',
      value: '04aae07202ef42dab78b539d06b64f26',
    },
  ],
  outputs: [{ name: 'greeting', description: 'written by the script', type: 'String', error_output: false }],
  options: {},
};

t.test('a real Heat deployment parses with its name, group, action and outputs', async (t) => {
  const dep = ok(REAL);
  t.equal(dep.id, REAL.id);
  t.equal(dep.name, 'hello-deployment');
  t.equal(dep.group, 'script');
  t.equal(dep.action, 'CREATE');
  t.same(
    dep.outputs.map((o) => o.name),
    ['greeting'],
  );
  t.same(dep.document, REAL, 'the document keeps every field');
});

t.test('inputs of every JSON type are kept as Heat sent them (upstream stringified String-typed ones)', async (t) => {
  const values: unknown[] = ['text', 42, 1.5, true, false, null, [1, 'a'], { k: { n: [true] } }, ''];
  const raw = deployment({ inputs: values.map((value, i) => ({ name: `in${i}`, type: 'String', value })) });
  const dep = ok(raw);
  values.forEach((v, i) => t.same(inputValue(dep, `in${i}`), v, `input ${i} keeps ${JSON.stringify(v)}`));
  t.same(
    (dep.document.inputs as unknown[]).slice(0, values.length),
    (raw.inputs as unknown[]).slice(0, values.length),
    'document inputs unchanged',
  );
  raw.name = 'changed';
  t.not(dep.document.name, 'changed', 'the document is a copy');
});

t.test('ids must be safe file names; other fields get defaults', async (t) => {
  for (const bad of [undefined, '', 42, '../etc/passwd', '.hidden', 'a/b', 'x'.repeat(300)]) {
    const parsed = parseDeployment({ id: bad, group: 'script' });
    t.notOk(parsed.ok, `id ${JSON.stringify(bad)} refused`);
  }
  t.notOk(parseDeployment(['not', 'an', 'object']).ok);
  t.notOk(parseDeployment(null).ok);
  const dep = ok({ id: 'abc' });
  t.equal(dep.name, 'abc', 'name defaults to the id');
  t.equal(dep.group, 'Heat::Ungrouped', 'Heat::Ungrouped when no group');
  t.equal(dep.action, 'CREATE', 'CREATE when there is no deploy_action');
  t.same(dep.inputs, []);
});

t.test('malformed inputs and outputs are dropped with a warning; unusual actions are kept', async (t) => {
  const parsed = parseDeployment({
    id: 'x',
    inputs: [{ name: 'ok', value: 1 }, { value: 2 }, 'junk', { name: 'deploy_action', value: 'REBOOT' }],
    outputs: 'nope',
  });
  t.ok(parsed.ok);
  if (!parsed.ok) return;
  t.same(
    parsed.deployment.inputs.map((i) => i.name),
    ['ok', 'deploy_action'],
  );
  t.equal(parsed.deployment.action, 'REBOOT');
  t.equal(parsed.warnings.length, 4, 'two dropped inputs, outputs not a list, unknown action');
  const bad = parseDeployment({ id: 'y', inputs: 'nope', outputs: [{ name: 'o' }, { x: 1 }] });
  t.ok(bad.ok && bad.warnings.length === 2);
});

t.test('the last input of a repeated name wins, as upstream builds a dict', async (t) => {
  const dep = ok({
    id: 'x',
    inputs: [
      { name: 'a', value: 1 },
      { name: 'a', value: 2 },
    ],
  });
  t.equal(inputValue(dep, 'a'), 2);
  t.equal(inputValue(dep, 'missing'), undefined);
});

t.test('options.hook_timeout overrides the configured timeout', async (t) => {
  t.equal(ok({ id: 'a', options: { hook_timeout: 5 } }).hookTimeoutSeconds, 5);
  t.equal(ok({ id: 'b', options: { hook_timeout: '7.5' } }).hookTimeoutSeconds, 7.5);
  t.equal(ok({ id: 'c', options: { hook_timeout: 0 } }).hookTimeoutSeconds, 0);
  t.equal(ok({ id: 'd', options: {} }).hookTimeoutSeconds, undefined);
  const bad = parseDeployment({ id: 'e', options: { hook_timeout: 'soon' } });
  t.ok(bad.ok && bad.deployment.hookTimeoutSeconds === undefined && bad.warnings.length === 1);
  const negative = parseDeployment({ id: 'f', options: { hook_timeout: -1 } });
  t.ok(negative.ok && negative.deployment.hookTimeoutSeconds === undefined);
});

t.test('secret inputs are named for the logger, and parsing alone registers nothing', async (t) => {
  const password = `pw-${Date.now()}-secret`;
  const dep = ok({
    id: 'x',
    inputs: [
      { name: 'deploy_password', value: password },
      { name: 'plain', value: 'visible-value' },
    ],
  });
  t.same(secretInputTexts(dep), [password]);
  t.match(
    scrubText(`log line with ${password}`),
    password,
    'whoever holds the deployment registers it (the dispatcher)',
  );
});

t.test('withGroupAndConfig changes the group and config of a copy', async (t) => {
  const dep = ok({ id: 'x', group: 'component', config: { configs: [] } });
  const next = withGroupAndConfig(dep, 'script', '#!/bin/sh\n');
  t.equal(next.group, 'script');
  t.equal(next.document.group, 'script');
  t.equal(next.document.config, '#!/bin/sh\n');
  t.equal(dep.document.group, 'component', 'the original is unchanged');
});

t.test('a __proto__ key in a deployment stays data', async (t) => {
  const raw = JSON.parse('{"id": "p", "__proto__": {"polluted": true}, "options": {"__proto__": {"x": 1}}}') as unknown;
  const dep = ok(raw);
  t.equal(({} as Record<string, unknown>).polluted, undefined);
  t.ok(Object.hasOwn(dep.document, '__proto__'));
});

t.test('idOptional: a deployment object without an id reads with the id "" (a hook run by hand)', async (t) => {
  const parsed = parseDeployment({ group: 'cfn-init', config: {} }, { idOptional: true });
  t.ok(parsed.ok);
  if (parsed.ok) {
    t.equal(parsed.deployment.id, '');
    t.equal(parsed.deployment.group, 'cfn-init');
  }
  t.ok(parseDeployment({ id: null, group: 'x' }, { idOptional: true }).ok, 'null is no id either');
  for (const bad of ['', 42, '../x'])
    t.notOk(
      parseDeployment({ id: bad }, { idOptional: true }).ok,
      `a given id ${JSON.stringify(bad)} is still checked`,
    );
  t.notOk(parseDeployment({ group: 'x' }).ok, 'without the option an id is required');
});
