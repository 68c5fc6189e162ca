import t from 'tap';
import { rerunDetailLines, rerunFindings, rerunsSection } from '../../src/status/reconverge.js';
import { rerunStatusOf } from '../../src/status/rerun-status.js';
import { toStatus } from '../../src/status/status.js';
import type { DeploymentRecord } from '../../src/state/store.js';

// What `status` says of re-runs: the RE-RUNS section, the verdict's findings, the lines of `status <id>`, and the
// `reconverge` object of --json (toStatus), with a reason scrubbed of anything credential-shaped.

const last = (outcome: 'converged' | 'changed' | 'failed', extra: Record<string, unknown> = {}) => ({
  outcome,
  startedAt: '2026-03-01T10:00:00.000Z',
  endedAt: '2026-03-01T10:00:05.000Z',
  exitCode: 0,
  statusCode: '0',
  ...extra,
});

const rerun = (id: string, state: 'signalled' | 'reconverging' | 'removed', rc: unknown) =>
  ({ id, name: `n-${id}`, state, reconverge: rc }) as Parameters<typeof rerunFindings>[0][number];

t.test('findings: a failed re-run fails, a changed one is drift, a converged one clears both', async (t) => {
  const found = rerunFindings([
    rerun('f', 'signalled', { runs: 2, running: false, last: last('failed', { reason: 'deploy_status_code 3' }) }),
    rerun('c', 'signalled', { runs: 1, running: false, last: last('changed', { changes: 4 }) }),
    rerun('ok', 'signalled', { runs: 5, running: false, last: last('converged') }),
    rerun('gone', 'removed', { runs: 1, running: false, last: last('failed') }),
  ]);
  t.equal(found.failed.length, 1);
  t.match(found.failed[0], /deployment f \(n-f\): its re-run at .* failed: deploy_status_code 3/);
  t.same(found.drifted.length, 1);
  t.match(found.drifted[0], /deployment c \(n-c\) had drifted: .* changed 4 resources/);
});

t.test('the RE-RUNS section: one line per deployment re-run; none without re-runs', async (t) => {
  t.equal(rerunsSection([rerun('x', 'signalled', undefined)]), undefined);
  const text = rerunsSection([
    rerun('a', 'signalled', { runs: 3, running: false, last: last('changed', { changes: 2 }) }),
    rerun('b', 'reconverging', { runs: 1, running: true }),
  ]);
  t.match(text, /^RE-RUNS\nID +NAME +RUNS +LAST RE-RUN +OUTCOME +EXIT +CHANGES +REASON\n/);
  t.match(text, /\na +n-a +3 +2026-03-01T10:00:05Z +changed +0 +2 +-/);
  t.match(text, /\nb +n-b +1 +running now +- +- +- +-/);
});

t.test('status <id>: the interval, the next re-run, the last outcome and its reason', async (t) => {
  t.same(rerunDetailLines(undefined, {}), [], 'not re-run: nothing');
  t.same(rerunDetailLines(undefined, { intervalSeconds: 60, nextAt: '2026-03-01T10:01:00.000Z' }), [
    '  re-runs: none yet (every 60 s, next 2026-03-01T10:01:00.000Z)',
  ]);
  const lines = rerunDetailLines(
    { runs: 2, running: false, last: last('failed', { exitCode: null, statusCode: '6', reason: 'it broke' }) },
    { intervalSeconds: 30 },
  );
  t.same(lines, [
    '  re-runs: 2 (every 30 s)',
    '  last re-run: 2026-03-01T10:00:00.000Z to 2026-03-01T10:00:05.000Z: failed (exit code -, deploy_status_code 6)',
    "  last re-run's reason: it broke",
  ]);
});

t.test('--json: deployments[].reconverge from the record, the reason scrubbed; absent when never re-run', async (t) => {
  const base = {
    version: 1,
    id: 'j',
    name: 'json',
    group: 'script',
    action: 'CREATE',
    state: 'signalled',
    failed: false,
    signal: { state: 'sent', transport: 'CFN_SIGNAL', attempts: 1 },
    firstSeenAt: '2026-03-01T09:00:00.000Z',
    updatedAt: '2026-03-01T10:00:05.000Z',
  } as unknown as DeploymentRecord;
  t.equal(toStatus(base).reconverge, undefined);
  t.equal(rerunStatusOf(base), undefined);
  const record = {
    ...base,
    reconverge: {
      runs: 4,
      last: last('failed', { reason: 'curl https://user:hunter2@example.invalid/x failed' }),
    },
  } as unknown as DeploymentRecord;
  const json = JSON.parse(JSON.stringify(toStatus(record))) as Record<string, unknown>;
  t.match(json.reconverge, { runs: 4, running: false, last: { outcome: 'failed', exitCode: 0, statusCode: '0' } });
  t.notMatch(JSON.stringify(json), /hunter2/, 'no credential in the reason');
});
