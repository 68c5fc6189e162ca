import t from 'tap';
import type { HookResult } from '../../src/hooks/host/external.js';
import {
  bodyFromHookResult,
  failureBody,
  judgeSignal,
  SIGNAL_LIMIT_BYTES,
  signalLimitFor,
  trimSignalBody,
  ZAQAR_SIGNAL_LIMIT_BYTES,
} from '../../src/heat/signal-body.js';
import { pythonJsonDumps } from '../../src/util/python-json.js';
import { parsePythonJson } from '../../src/util/python-json-parse.js';

// Hook result -> signal body (upstream rules plus the failures upstream lost), Heat's verdict, and the size cap.

function result(over: Partial<HookResult> = {}): HookResult {
  return {
    exitCode: 0,
    signal: null,
    timedOut: false,
    aborted: false,
    overflowed: false,
    stdout: '',
    stderr: '',
    stdoutTruncated: false,
    stderrTruncated: false,
    durationMs: 1,
    ...over,
  };
}

t.test('JSON object on stdout is the signal, whatever the exit code', async (t) => {
  const out = { deploy_stdout: 'o', deploy_stderr: 'e', deploy_status_code: 0, result: 'x' };
  t.same(bodyFromHookResult(result({ stdout: JSON.stringify(out), stderr: 'chatter' }), '/h', 10), out);
  t.same(
    bodyFromHookResult(result({ stdout: JSON.stringify(out), exitCode: 3 }), '/h', 10),
    out,
    'an explicit status code is kept',
  );
  t.same(
    bodyFromHookResult(result({ stdout: '{"result": 1}', exitCode: 3 }), '/h', 10),
    { result: 1, deploy_status_code: 3 },
    'a missing status code gets the exit code',
  );
  t.same(bodyFromHookResult(result({ stdout: '{"result": 1}' }), '/h', 10), { result: 1 }, 'exit 0 adds nothing');
});

t.test('text, non-object JSON or truncated stdout becomes the text triple', async (t) => {
  t.same(bodyFromHookResult(result({ stdout: 'plain text', stderr: 'err', exitCode: 0 }), '/h', 10), {
    deploy_stdout: 'plain text',
    deploy_stderr: 'err',
    deploy_status_code: 0,
  });
  t.same(bodyFromHookResult(result({ stdout: '[1, 2]', exitCode: 2 }), '/h', 10), {
    deploy_stdout: '[1, 2]',
    deploy_stderr: '',
    deploy_status_code: 2,
  });
  t.same(bodyFromHookResult(result({ stdout: '{"a": 1}', stdoutTruncated: true }), '/h', 10), {
    deploy_stdout: '{"a": 1}',
    deploy_stderr: '',
    deploy_status_code: 0,
  });
  t.same(bodyFromHookResult(result({ stderr: 'Traceback ...', exitCode: 1 }), '/h', 10), {
    deploy_stdout: '',
    deploy_stderr: 'Traceback ...',
    deploy_status_code: 1,
  });
  t.same(
    bodyFromHookResult(result(), '/h', 10),
    { deploy_stdout: '', deploy_stderr: '', deploy_status_code: 0 },
    'empty success still says so',
  );
});

t.test('crash, timeout and spawn failures are failures with a clear deploy_stderr', async (t) => {
  const crashed = bodyFromHookResult(
    result({ exitCode: null, signal: 'SIGSEGV', stderr: 'about to crash\n' }),
    '/hooks/x',
    10,
  );
  t.equal(crashed.deploy_status_code, 139);
  t.match(crashed.deploy_stderr, /^about to crash\nos-config-agent: hook \/hooks\/x was killed by SIGSEGV$/);
  const timed = bodyFromHookResult(
    result({ exitCode: null, signal: 'SIGTERM', timedOut: true, stdout: 'partial' }),
    '/hooks/x',
    7,
  );
  t.equal(timed.deploy_status_code, 124);
  t.equal(timed.deploy_stdout, 'partial');
  t.match(timed.deploy_stderr, 'did not finish within 7 s; its process group was killed');
  const enoent = bodyFromHookResult(
    result({ exitCode: null, spawnError: { code: 'ENOENT', message: 'spawn ENOENT' } }),
    '/hooks/x',
    7,
  );
  t.equal(enoent.deploy_status_code, 127);
  const eacces = bodyFromHookResult(
    result({ exitCode: null, spawnError: { code: 'EACCES', message: 'spawn EACCES' } }),
    '/hooks/x',
    7,
  );
  t.equal(eacces.deploy_status_code, 126);
  t.match(eacces.deploy_stderr, 'could not be started (EACCES)');
  t.same(failureBody('m', 5, 'o', 'e'), {
    deploy_stdout: 'o',
    deploy_stderr: 'e\nos-config-agent: m',
    deploy_status_code: 5,
  });
});

t.test('judgeSignal reads a signal as Heat does', async (t) => {
  const outputs = [{ name: 'result' }, { name: 'problem', error_output: true }];
  const cases: Array<[Record<string, unknown>, boolean]> = [
    [{}, false],
    [{ deploy_status_code: 0 }, false],
    [{ deploy_status_code: '0' }, false],
    [{ deploy_status_code: '' }, false],
    [{ deploy_status_code: null }, false],
    [{ deploy_status_code: false }, false],
    [{ deploy_status_code: 1 }, true],
    [{ deploy_status_code: '2' }, true],
    [{ deploy_status_code: true }, true],
    [{ deploy_status_code: 0.5 }, true],
    [{ result: 'fine' }, false],
    [{ problem: 'disk full' }, true],
    [{ problem: null }, true],
  ];
  for (const [body, failed] of cases) t.equal(judgeSignal(body, outputs).failed, failed, JSON.stringify(body));
  t.equal(judgeSignal({ deploy_status_code: 3 }, []).statusCode, '3');
  t.match(judgeSignal({ problem: 'x' }, outputs).reason, 'error output problem');
  t.same(judgeSignal({ problem: 'x' }, [{ name: 'problem', error_output: false }]), { failed: false });
});

t.test('small bodies are sent as they are, ASCII-escaped like upstream', async (t) => {
  const body = { deploy_stdout: 'caf\u00e9', deploy_status_code: 0 };
  const trimmed = trimSignalBody(body);
  t.equal(trimmed.trimmed, 0);
  t.equal(trimmed.body, body);
  t.equal(trimmed.text, '{"deploy_stdout": "caf\\u00e9", "deploy_status_code": 0}');
});

t.test('a trimmed body keeps its keys where the hook put them, integer-like ones included', async (t) => {
  const body = parsePythonJson(
    `{"deploy_stdout": "${'A'.repeat(1_100_000)}", "b": 1, "7": 2, "deploy_status_code": 0}`,
  ) as Record<string, unknown>;
  const trimmed = trimSignalBody(body);
  t.ok(trimmed.trimmed > 0, 'the body was trimmed');
  t.match(
    trimmed.text,
    /^\{"deploy_stdout": "\[os-config-agent: \d+ characters trimmed from the start\]\\nA+", "b": 1, "7": 2, "deploy_status_code": 0\}$/,
  );
});

t.test('over the limit: stdout and stderr keep their tails, in proportion, with a note', async (t) => {
  const stdout = 'A'.repeat(700_000) + 'STDOUT-TAIL';
  const stderr = 'B'.repeat(500_000) + 'STDERR-TAIL';
  const body = { deploy_stdout: stdout, deploy_stderr: stderr, deploy_status_code: 1, result: 'kept' };
  const trimmed = trimSignalBody(body);
  t.ok(trimmed.text.length <= SIGNAL_LIMIT_BYTES, `${trimmed.text.length} bytes`);
  t.ok(trimmed.text.length > SIGNAL_LIMIT_BYTES - 2000, 'not cut much more than needed');
  const out = JSON.parse(trimmed.text) as Record<string, string>;
  t.match(out.deploy_stdout, /^\[os-config-agent: \d+ characters trimmed from the start\]\nA+STDOUT-TAIL$/);
  t.match(out.deploy_stderr, /STDERR-TAIL$/);
  t.equal(out.result, 'kept');
  t.equal(out.deploy_status_code, 1);
  const keptOut = out.deploy_stdout!.length;
  const keptErr = out.deploy_stderr!.length;
  t.ok(Math.abs(keptOut / keptErr - 700 / 500) < 0.05, 'cut in proportion to size');
  const removed =
    Number(/(\d+) characters/.exec(out.deploy_stdout!)?.[1]) + Number(/(\d+) characters/.exec(out.deploy_stderr!)?.[1]);
  t.equal(removed, trimmed.trimmed);
});

t.test('escaped characters count at their escaped size; surrogate pairs are never split', async (t) => {
  const emoji = '\ud83d\ude00';
  const body = { deploy_stdout: emoji.repeat(200_000) + 'END', deploy_stderr: '\n"'.repeat(10) };
  const trimmed = trimSignalBody(body, 100_000);
  t.ok(trimmed.text.length <= 100_000);
  const out = JSON.parse(trimmed.text) as Record<string, string>;
  const tail = out.deploy_stdout!.replace(/^\[[^\]]+\]\n/, '');
  t.notOk(/^[\udc00-\udfff]/.test(tail), 'no lone low surrogate at the start');
  t.match(tail, /END$/);
  t.equal(pythonJsonDumps(trimmed.body), trimmed.text);
});

t.test('other large text values are trimmed next; huge non-text outputs give a failure body', async (t) => {
  const body = { deploy_stdout: 'short', big_output: 'Z'.repeat(2_000_000) + 'OUT-TAIL', deploy_status_code: 0 };
  const trimmed = trimSignalBody(body);
  t.ok(trimmed.text.length <= SIGNAL_LIMIT_BYTES);
  t.match((JSON.parse(trimmed.text) as Record<string, string>).big_output, /OUT-TAIL$/);
  const huge = { deploy_stdout: 'x', list: Array.from({ length: 300_000 }, (_, i) => i), deploy_status_code: 0 };
  const failed = trimSignalBody(huge);
  t.ok(failed.text.length <= SIGNAL_LIMIT_BYTES);
  t.equal(failed.body.deploy_status_code, 1);
  t.match(failed.body.deploy_stderr, 'outputs were dropped');
  const failedAlready = trimSignalBody({ ...huge, deploy_status_code: 4 });
  t.equal(failedAlready.body.deploy_status_code, 4, 'an existing failure code is kept');
});

t.test('Zaqar signals have their own limit', async (t) => {
  t.equal(signalLimitFor('ZAQAR_SIGNAL'), ZAQAR_SIGNAL_LIMIT_BYTES);
  t.equal(signalLimitFor('CFN_SIGNAL'), SIGNAL_LIMIT_BYTES);
});
