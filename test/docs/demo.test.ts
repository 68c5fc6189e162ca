import { spawnSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { REPO, requireBundle } from '../helpers/bundle.js';

// The README's first command ends in `npm run demo`: the demo must run a whole cycle of the built daemon bundle on
// the example (Heat's boot data configures the request transport, which the demo serves on loopback; its template has
// a .oac control file, so the code-split YAML loading is exercised), render the file its example intends, with no
// warning, and say so.
t.test('the quick-start demo renders what its example intends, with no warning, and says so', async (t) => {
  requireBundle();
  const env = { ...process.env };
  // tap's loader hooks are not for the bundle.
  delete env.NODE_OPTIONS;
  const r = spawnSync(process.execPath, ['scripts/demo.mjs'], { cwd: REPO, encoding: 'utf8', timeout: 120_000, env });
  t.equal(r.status, 0, `demo exit status 0\n${r.stdout}\n${r.stderr}`);
  const log = r.stdout.slice(0, r.stdout.indexOf('\nFiles the agent wrote'));
  t.notMatch(log, /^ {2}\S+ (warn|error|fatal) /m, 'no warning or error in the cycle log');
  t.match(log, /^ {2}\S+ info {2}agent configuration rewritten from os-collect-config metadata/m, 'self-configured');
  t.match(
    log,
    /deploymentName=app-settings .*to=skipped reason="group os-apply-config has no hook: its config is applied as os-apply-config metadata/,
  );
  t.match(r.stdout, /0640 {2}\/etc\/demo\/app\.conf/, 'the template rendered with the mode its .oac sets');
  t.match(r.stdout, /^\/etc\/demo\/app\.conf is what the example intends/m, 'the demo says so');
  t.match(r.stdout, /agent exit status: 0/);
  const rendered = readFileSync(path.join(REPO, 'demo-root/etc/demo/app.conf'), 'utf8');
  t.equal(rendered, readFileSync(path.join(REPO, 'examples/demo-expected/etc/demo/app.conf'), 'utf8'));
  t.match(rendered, /^port = 8080$/m, 'the os-apply-config deployment reached the template');
  t.equal(statSync(path.join(REPO, 'demo-root/etc/demo/app.conf')).mode & 0o777, 0o640);
});
