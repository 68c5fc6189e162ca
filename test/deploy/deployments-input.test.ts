import { readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import {
  deploymentsFrom,
  readCachedMetadata,
  readHeatConfigFile,
  writeHeatConfigFile,
} from '../../src/deploy/deployments-input.js';
import { deployConfig } from '../helpers/deploy-fixtures.js';
import { captureLog } from '../helpers/log-capture.js';

// The deployments list: os-apply-config's deep merge of the metadata files, the cache, the heat-config file.

t.test('deploymentsFrom: the later source replaces the list; no key means unknown', async (t) => {
  const log = captureLog();
  t.same(deploymentsFrom([{ deployments: [{ id: 'a' }] }, { other: 1 }, { deployments: [{ id: 'b' }] }], log.log), [
    { id: 'b' },
  ]);
  t.equal(deploymentsFrom([{ other: 1 }, 'text', null, [1]], log.log), undefined);
  t.same(deploymentsFrom([{ deployments: [] }], log.log), []);
  t.equal(deploymentsFrom([{ deployments: { not: 'a list' } }], log.log), undefined);
  t.equal(deploymentsFrom([{ deployments: null }], log.log), undefined);
  t.ok(
    log.lines.some(
      (l) => l.msg === 'the merged "deployments" value is not a list; deployments left alone' && l.type === 'null',
    ),
  );
});

t.test('readCachedMetadata: the files of os_config_files.json, in order; unreadable ones skipped', async (t) => {
  const root = t.testdir();
  const loaded = await deployConfig(root);
  const cache = loaded.config.DEFAULT.cachedir;
  const log = captureLog();
  await t.rejects(readCachedMetadata(loaded.config, loaded.paths, log.log), {
    code: 'ERR_METADATA',
    message: /\/var\/lib\/os-collect-config\/os_config_files\.json .*run the agent once/,
  });
  const { mkdirSync } = await import('node:fs');
  mkdirSync(cache, { recursive: true });
  writeFileSync(path.join(cache, 'heat_local.json'), JSON.stringify({ deployments: [{ id: 'boot' }] }));
  writeFileSync(path.join(cache, 'cfn.json'), JSON.stringify({ deployments: [{ id: 'live' }] }));
  writeFileSync(path.join(cache, 'broken.json'), '{');
  // Upstream writes instance paths; a list written under --root holds mapped ones. Both work.
  writeFileSync(
    path.join(cache, 'os_config_files.json'),
    JSON.stringify([
      '/var/lib/os-collect-config/heat_local.json',
      path.join(cache, 'broken.json'),
      path.join(cache, 'cfn.json'),
    ]),
  );
  const values = await readCachedMetadata(loaded.config, loaded.paths, log.log);
  t.same(values, [{ deployments: [{ id: 'boot' }] }, { deployments: [{ id: 'live' }] }]);
  t.same(deploymentsFrom(values, log.log), [{ id: 'live' }]);
  t.ok(
    log.lines.some((l) => l.msg === 'cached metadata file skipped' && String(l.reason).startsWith('invalid-json: ')),
  );
  writeFileSync(path.join(cache, 'os_config_files.json'), '{"not": "a list"}');
  await t.rejects(readCachedMetadata(loaded.config, loaded.paths, log.log), {
    code: 'ERR_METADATA',
    message: /not a list of file names/,
  });
});

t.test('readHeatConfigFile: a list; empty means none; anything else is an error', async (t) => {
  const dir = t.testdir({ good: '[{"id": "a"}]', empty: '\n', bad: '{"id": 1}', garbage: 'nope' });
  t.same(await readHeatConfigFile(path.join(dir, 'good'), 'good', 1000), [{ id: 'a' }]);
  t.same(await readHeatConfigFile(path.join(dir, 'empty'), 'empty', 1000), []);
  await t.rejects(readHeatConfigFile(path.join(dir, 'bad'), 'bad', 1000), {
    code: 'ERR_METADATA',
    message: 'does not hold a JSON list',
  });
  await t.rejects(readHeatConfigFile(path.join(dir, 'garbage'), 'garbage', 1000), { code: 'ERR_METADATA' });
  await t.rejects(readHeatConfigFile(path.join(dir, 'missing'), '/var/run/heat-config/heat-config', 1000), {
    message: 'cannot read the heat-config file /var/run/heat-config/heat-config: does not exist',
  });
});

t.test('writeHeatConfigFile: compact JSON as os-apply-config renders it, 0600, parents created', async (t) => {
  const root = t.testdir();
  const loaded = await deployConfig(root);
  await writeHeatConfigFile(loaded.config, [{ id: 'a', name: 'caf\u00e9', inputs: [] }]);
  const file = path.join(root, 'var/run/heat-config/heat-config');
  t.equal(readFileSync(file, 'utf8'), '[{"id": "a", "name": "caf\\u00e9", "inputs": []}]');
  t.equal(statSync(file).mode & 0o777, 0o600);
  const off = await deployConfig(root, { deploy: { heat_config_file: '' } });
  await writeHeatConfigFile(off.config, []);
  t.equal(readFileSync(file, 'utf8').length > 2, true, 'an empty option writes nothing');
  const blocked = await deployConfig(t.testdir({ var: { run: 'file' } }));
  await t.rejects(writeHeatConfigFile(blocked.config, []), { code: 'ERR_DEPLOYMENT_STATE' });
});
