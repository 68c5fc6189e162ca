import path from 'node:path';
import t from 'tap';
import { REPO, requireBundle, runProcess } from '../helpers/bundle.js';

// A short soak (300 polls, 5 redeploys: 2.5 simulated hours) through the soak benchmark: the daemon's open file
// descriptors and child processes are the same after it as after warm-up, every redeploy is signalled exactly once,
// and the daemon stops cleanly. Memory and speed are measured by `node test/bench/soak.mjs`, not asserted here.

interface Summary {
  polls: number;
  deploys: number;
  unsignalled: number;
  duplicateSignals: number;
  renderedLastRevision: boolean;
  fdStart: number;
  fdEnd: number;
  childrenStart: number;
  childrenEnd: number;
  errorLines: number;
  exitCode: number | null;
}

t.test('short soak: no file descriptor or child process leak', async (t) => {
  requireBundle();
  const {
    code,
    stdout: out,
    stderr: err,
  } = await runProcess(process.execPath, [path.join(REPO, 'test/bench/soak.mjs'), '--polls', '300', '--deploys', '5'], {
    timeoutMs: 100_000,
  });
  t.equal(code, 0, `soak run succeeded${err ? `: ${err.slice(-2000)}` : ''}`);
  const line = out.trim().split('\n').pop() ?? '{}';
  const s = JSON.parse(line) as Summary;
  t.comment(`soak-short ${line}`);
  t.ok(s.polls >= 300, `${s.polls} polls`);
  t.equal(s.unsignalled, 0, 'every redeploy signalled');
  t.equal(s.duplicateSignals, 0, 'none signalled twice');
  t.ok(s.renderedLastRevision, 'the last revision is rendered');
  t.equal(s.fdEnd, s.fdStart, 'open file descriptors: same count after the soak as after warm-up');
  t.equal(s.childrenEnd, s.childrenStart, 'child processes: same count after the soak as after warm-up');
  t.equal(s.childrenEnd, 0, 'no child process left running');
  t.equal(s.errorLines, 0, 'no error logged');
  t.equal(s.exitCode, 0, 'the daemon stopped cleanly');
});
