import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { REPO } from '../helpers/bundle.js';
import { BAD, GOOD, NO_HOOK, runFailingCycle } from '../helpers/failing-cycle.js';

// The jq recipes of docs/logging.md, run as written against real log output: one cycle of the built daemon with a
// deployment that succeeds, one that fails and one whose hook is missing, with a line that is not JSON among them (as
// the journal of the unit can hold: a hook's stray output). `journalctl -u os-config-agent -o cat` is what the lines
// are read from on a server; here they are given on stdin.

const JOURNAL = 'journalctl -u os-config-agent -o cat | ';

function recipes(): Map<string, string> {
  const doc = readFileSync(path.join(REPO, 'docs/logging.md'), 'utf8');
  const out = new Map<string, string>();
  for (const m of doc.matchAll(/<!-- recipe: ([a-z-]+) -->\n```sh\n(.*)\n```/g)) {
    const line = m[2]!;
    if (!line.startsWith(JOURNAL)) throw new Error(`recipe ${m[1]} does not read the journal: ${line}`);
    out.set(m[1]!, line.slice(JOURNAL.length));
  }
  return out;
}

const skip = spawnSync('sh', ['-c', 'command -v jq']).status !== 0 ? 'needs jq (the Debian package)' : false;

t.test('every recipe, on the log of a real cycle', { skip }, async (t) => {
  const found = recipes();
  t.same([...found.keys()].sort(), [
    'error-codes',
    'failed-deployments',
    'one-deployment',
    'state-changes',
    'warnings',
  ]);
  const run = await runFailingCycle(t.testdir());
  t.equal(run.code, 0, run.stderr);
  const lines = run.stdout.trimEnd().split('\n');
  const log = [...lines.slice(0, 3), 'a line that is not JSON (a hook wrote it)', ...lines.slice(3)].join('\n') + '\n';
  const jq = (name: string) => {
    const r = spawnSync('sh', ['-c', found.get(name)!], { input: log, encoding: 'utf8', timeout: 30_000 });
    t.equal(r.status, 0, `${name}: ${r.stderr}`);
    return r.stdout.trimEnd().split('\n').filter(Boolean);
  };

  const warnings = jq('warnings').map((l) => JSON.parse(l) as { level: string; msg: string; deploymentName?: string });
  t.ok(warnings.length >= 2, 'the failures are there');
  t.ok(
    warnings.every((w) => ['warn', 'error', 'fatal'].includes(w.level)),
    'and nothing below a warning',
  );
  t.ok(warnings.some((w) => w.msg === 'deployment state changed' && w.deploymentName === BAD));

  const changes = jq('state-changes');
  t.ok(
    changes.some((l) => l.endsWith(`\t${BAD}\trunning\tdone`)),
    changes.join('\n'),
  );
  t.ok(changes.some((l) => l.endsWith(`\t${GOOD}\trunning\tdone`)));

  t.same(jq('failed-deployments').sort(), [`${BAD} deploy_status_code 1`, `${NO_HOOK} deploy_status_code 127`]);

  const one = jq('one-deployment').map((l) => JSON.parse(l) as { deploymentName: string });
  t.ok(one.length >= 3 && one.every((l) => l.deploymentName === GOOD), 'only its lines');

  t.match(jq('error-codes'), [/^\s*1 ERR_HOOK$/]);
});
