import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { configTable } from '../../scripts/config-table.js';
import { REPO } from '../helpers/bundle.js';

// docs/configuration.md is the reference for every option: its table is generated from the schema and must match
// it. UPDATE_DOCS=1 (or the older UPDATE_README=1) rewrites the table in place; the test still fails that run, so a
// stale table can never pass unnoticed.
const FILE = path.join(REPO, 'docs/configuration.md');
const START = '<!-- config-table:start -->';
const END = '<!-- config-table:end -->';

t.test('docs/configuration.md option table matches the schema', async (t) => {
  const doc = readFileSync(FILE, 'utf8');
  const start = doc.indexOf(START);
  const end = doc.indexOf(END);
  t.ok(start >= 0 && end > start, 'the table markers are there, in order');
  const table = configTable();
  const current = doc.slice(start + START.length, end).trim();
  if (current === table) {
    t.pass('table is current');
    return;
  }
  if (process.env.UPDATE_DOCS === '1' || process.env.UPDATE_README === '1') {
    writeFileSync(FILE, `${doc.slice(0, start)}${START}\n${table}\n${doc.slice(end)}`);
  }
  t.fail('docs/configuration.md option table is out of date (rerun with UPDATE_DOCS=1 to rewrite it):\n' + table);
});

t.test('every option of the schema has a row (one assertion each, to name the missing one)', async (t) => {
  const rows = configTable().split('\n').slice(2);
  const doc = readFileSync(FILE, 'utf8');
  for (const row of rows) t.ok(doc.includes(row), `row present: ${row.slice(0, 60)}`);
});
