import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { deploymentEventsTable, signalEventsTable } from '../../scripts/state-tables.js';
import { REPO } from '../helpers/bundle.js';

// docs/state-machine.md shows the events of the state machine as the code declares them: its two event tables are
// generated from the tables of src/state/ and must match them. UPDATE_DOCS=1 rewrites them in place; the test still
// fails that run, so a stale table can never pass unnoticed.
const FILE = path.join(REPO, 'docs/state-machine.md');

for (const [name, table] of [
  ['events-table', deploymentEventsTable],
  ['signal-events-table', signalEventsTable],
] as const) {
  t.test(`docs/state-machine.md ${name} matches the state machine`, async (t) => {
    const start = `<!-- ${name}:start -->`;
    const end = `<!-- ${name}:end -->`;
    const doc = readFileSync(FILE, 'utf8');
    const from = doc.indexOf(start);
    const to = doc.indexOf(end);
    t.ok(from >= 0 && to > from, 'the table markers are there, in order');
    const expected = table();
    if (doc.slice(from + start.length, to).trim() === expected) {
      t.pass('table is current');
      return;
    }
    if (process.env.UPDATE_DOCS === '1' && from >= 0 && to > from)
      writeFileSync(FILE, `${doc.slice(0, from)}${start}\n${expected}\n${doc.slice(to)}`);
    t.fail(`docs/state-machine.md ${name} is out of date (rerun with UPDATE_DOCS=1 to rewrite it):\n${expected}`);
  });
}
