import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { COLLECTORS, findCollector } from '../../src/collectors/registry.js';
import type { CollectorName } from '../../src/collectors/types.js';
import { DEFAULT_COLLECTORS } from '../../src/config/options.js';

// Invariants every collector in the registry must satisfy (cloud-init's TestDataSourceInvariants in spirit).
const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const fileNameOf = (name: string) => name.replace(/_/g, '-');

t.test('the registry is not empty and names are unique', async (t) => {
  t.ok(COLLECTORS.length > 0);
  const names = COLLECTORS.map((c) => c.name);
  t.same([...new Set(names)], names, `unique: ${names.join(', ')}`);
});

t.test('every collector name is one upstream accepts (the collectors option)', async (t) => {
  for (const c of COLLECTORS) t.ok((DEFAULT_COLLECTORS as readonly string[]).includes(c.name), c.name);
});

t.test('every collector has a source file and a test file named after it', async (t) => {
  for (const c of COLLECTORS) {
    const file = fileNameOf(c.name);
    t.ok(existsSync(path.join(REPO, 'src/collectors', `${file}.ts`)), `src/collectors/${file}.ts`);
    t.ok(existsSync(path.join(REPO, 'test/collectors', `${file}.test.ts`)), `test/collectors/${file}.test.ts`);
  }
});

t.test('every collector has a collect function; watchPaths, when present, is a function', async (t) => {
  for (const c of COLLECTORS) {
    t.type(c.collect, 'function', c.name);
    if (c.watchPaths !== undefined) t.type(c.watchPaths, 'function', c.name);
  }
});

t.test('findCollector finds each registered collector and nothing else', async (t) => {
  for (const c of COLLECTORS) t.equal(findCollector(c.name), c);
  for (const name of DEFAULT_COLLECTORS) {
    const found = findCollector(name as CollectorName);
    if (found) t.equal(found.name, name);
  }
  t.equal(findCollector('config_drive' as CollectorName), undefined);
  t.equal(findCollector('constructor' as CollectorName), undefined);
});

t.test('the local collectors are registered', async (t) => {
  t.ok(findCollector('heat_local'));
  t.ok(findCollector('local'));
});
