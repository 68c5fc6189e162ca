import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { configTable } from '../../scripts/config-table.js';
import { REPO } from '../helpers/bundle.js';

// The README is part of the product: its configuration table is generated from the schema and must match it.
const readme = readFileSync(path.join(REPO, 'README.md'), 'utf8');

t.test('README configuration table matches the schema', async (t) => {
  const table = configTable();
  if (!readme.includes(table)) {
    if (process.env.UPDATE_README === '1') {
      const start = readme.indexOf('<!-- config-table:start -->');
      const end = readme.indexOf('<!-- config-table:end -->');
      writeFileSync(path.join(REPO, 'README.md'), `${readme.slice(0, start)}<!-- config-table:start -->\n${table}\n${readme.slice(end)}`);
    }
    t.fail('README.md configuration table is out of date (rerun with UPDATE_README=1 to rewrite it):\n' + table);
  } else {
    t.pass('table is current');
  }
});

t.test('README starts with the two quick-start commands', async (t) => {
  const quick = readme.slice(0, readme.indexOf('\n## ', readme.indexOf('## Quick start') + 5));
  t.match(quick, /npm ci && npm run demo/);
  t.match(quick, /bash \.ci\/run/);
});
