import { spawnSync } from 'node:child_process';
import { statSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { REPO, requireBundle } from '../helpers/bundle.js';

// The README's first command ends in `npm run demo`: the demo must run a whole cycle of the built daemon bundle on
// the example (its template has a .oac control file, so the code-split YAML loading is exercised) and succeed.
t.test(
  'the quick-start demo completes a cycle of the built agent and renders the example with its .oac mode',
  async (t) => {
    requireBundle();
    const env = { ...process.env };
    // tap's loader hooks are not for the bundle.
    delete env.NODE_OPTIONS;
    const r = spawnSync(process.execPath, ['scripts/demo.mjs'], { cwd: REPO, encoding: 'utf8', timeout: 120_000, env });
    t.equal(r.status, 0, `demo exit status 0\n${r.stdout}\n${r.stderr}`);
    t.notMatch(r.stdout, /\[error\]/, 'no error in the cycle log');
    t.match(r.stdout, /0640 {2}\/etc\/demo\/app\.conf/, 'the template rendered with the mode its .oac sets');
    t.match(r.stdout, /agent exit status: 0/);
    t.equal(statSync(path.join(REPO, 'demo-root/etc/demo/app.conf')).mode & 0o777, 0o640);
  },
);
