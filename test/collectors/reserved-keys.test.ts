import t from 'tap';
import { isReservedKey, withoutReservedKeys } from '../../src/collectors/reserved-keys.js';
import { COLLECTOR_NAMES } from '../../src/collectors/types.js';

// Cache keys the agent keeps for itself cannot come from metadata: the cache's file list and each source's document.

t.test('os_config_files and every collector name are reserved; other names are not', async (t) => {
  for (const name of ['os_config_files', ...COLLECTOR_NAMES]) t.ok(isReservedKey(name), name);
  for (const name of ['os_config_files.json', 'heat_local.json', 'requests', 'Heat', 'config'])
    t.notOk(isReservedKey(name));
});

t.test('a deployment named like a collector or the file list is left out with ERR_RESERVED_NAME', async (t) => {
  const doc = { deployments: [] };
  const { pairs, refused } = withoutReservedKeys('heat', [
    { key: 'heat', value: doc },
    { key: 'request', value: { a: 1 } },
    { key: 'app', value: { b: 2 } },
    { key: 'heat', value: { c: 3 } },
    { key: 'os_config_files', value: ['x'] },
  ]);
  t.same(pairs, [
    { key: 'heat', value: doc },
    { key: 'app', value: { b: 2 } },
  ]);
  t.same(
    refused.map((e) => [e.code, e.collector]),
    [
      ['ERR_RESERVED_NAME', 'heat'],
      ['ERR_RESERVED_NAME', 'heat'],
      ['ERR_RESERVED_NAME', 'heat'],
    ],
  );
  t.match(refused[0]?.message, /"request" .*reserved for the request source's document; rename it/);
  t.match(refused[2]?.message, /reserved for the cache's file list/);
});

t.test('local has no document of its own: a file named local is refused like any collector name', async (t) => {
  const { pairs, refused } = withoutReservedKeys('local', [
    { key: 'local', value: 1 },
    { key: 'heat_local', value: 2 },
    { key: 'x.json', value: 3 },
  ]);
  t.same(pairs, [{ key: 'x.json', value: 3 }]);
  t.equal(refused.length, 2);
  t.match(refused[0]?.message, /^a local file named "local"/);
});
