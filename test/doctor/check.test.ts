import t from 'tap';
import { exitCodeOf, fail, formatReport, ok, reportOf, skipped, warn } from '../../src/doctor/check.js';
import { skewCheck } from '../../src/doctor/clock-skew.js';
import { FAIL_FREE_BYTES, judgeSpace, WARN_FREE_BYTES } from '../../src/doctor/disk-check.js';
import { groupsOf } from '../../src/doctor/hook-checks.js';

// The pure parts of doctor: the report's result and exit code, the one-line format, and the thresholds of the disk
// and clock checks (a full disk cannot be made in a unit test; its figures can).

const GiB = 1024 * 1024 * 1024;

t.test('the report: a failure makes exit 1; warnings and skips exit 0', async (t) => {
  t.equal(exitCodeOf(reportOf([ok('a', 'fine'), skipped('b', 'off')])), 0);
  t.equal(reportOf([ok('a', 'fine'), skipped('b', 'off')]).result, 'ok');
  const warned = reportOf([ok('a', 'fine'), warn('b', 'low', 'free some')]);
  t.equal(warned.result, 'warn');
  t.equal(exitCodeOf(warned), 0);
  const failed = reportOf([warn('b', 'low', 'free some'), fail('c', 'down', 'start it')]);
  t.equal(failed.result, 'fail');
  t.equal(exitCodeOf(failed), 1);
  t.equal(failed.version, 1, 'the JSON shape is versioned');
});

t.test('the human format: one line per check, multi-line causes folded, the fix after the cause', async (t) => {
  const text = formatReport(
    reportOf([ok('config', 'read x'), fail('source.heat', 'line one\n  line two', 'check it')]),
  );
  t.same(text.trimEnd().split('\n'), ['ok    config       read x', 'FAIL  source.heat  line one line two -- check it']);
});

t.test('disk thresholds: fail below 16 MiB or 64 inodes, warn below 256 MiB or 5%, else ok', async (t) => {
  const base = { freeBytes: 10 * GiB, totalBytes: 20 * GiB, freeInodes: 100_000, totalInodes: 200_000 };
  t.equal(judgeSpace(base).verdict, 'ok');
  t.equal(judgeSpace({ ...base, freeBytes: FAIL_FREE_BYTES - 1 }).verdict, 'fail');
  t.equal(judgeSpace({ ...base, freeBytes: FAIL_FREE_BYTES }).verdict, 'warn');
  t.equal(judgeSpace({ ...base, freeBytes: WARN_FREE_BYTES - 1 }).verdict, 'warn');
  t.equal(judgeSpace({ ...base, freeBytes: WARN_FREE_BYTES, totalBytes: WARN_FREE_BYTES * 2 }).verdict, 'ok');
  t.equal(judgeSpace({ ...base, freeBytes: 0.04 * 100 * GiB, totalBytes: 100 * GiB }).verdict, 'warn', 'under 5% free');
  t.equal(judgeSpace({ ...base, freeInodes: 63 }).verdict, 'fail', 'inodes exhausted');
  t.equal(judgeSpace({ ...base, freeInodes: 9_000 }).verdict, 'warn', 'under 5% of inodes free');
  t.equal(
    judgeSpace({ ...base, freeInodes: 0, totalInodes: 0 }).verdict,
    'ok',
    'a file system without an inode count is judged on space',
  );
  t.match(judgeSpace(base).why, /10240 MiB free of 20480 MiB, 100000 of 200000 inodes free/);
});

t.test('clock skew: ok up to 5 minutes, warn up to 15, fail beyond; the worst sample decides', async (t) => {
  t.equal(skewCheck([]).verdict, 'skipped');
  t.equal(skewCheck([{ skewSeconds: 300, url: 'http://a' }]).verdict, 'ok');
  t.equal(skewCheck([{ skewSeconds: -301, url: 'http://a' }]).verdict, 'warn');
  t.equal(skewCheck([{ skewSeconds: 900, url: 'http://a' }]).verdict, 'warn');
  const worst = skewCheck([
    { skewSeconds: 2, url: 'http://a' },
    { skewSeconds: -901, url: 'http://b' },
  ]);
  t.equal(worst.verdict, 'fail');
  t.match(worst.cause, /901 s behind http:\/\/b/);
  t.match(worst.fix, /synchronise the clock/);
});

t.test('groups in the deployments: ungrouped, each component tool, sorted and unique', async (t) => {
  const groups = groupsOf([
    { id: 'a', group: 'script' },
    { id: 'b' },
    { id: 'c', group: 'component', config: { configs: [{ tool: 'puppet', actions: ['CREATE'] }, { tool: 'script' }] } },
    'not an object',
  ]);
  t.same(groups, ['Heat::Ungrouped', 'puppet', 'script']);
});
