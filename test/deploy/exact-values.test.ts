import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { runDeployments } from '../../src/deploy/dispatch.js';
import { storeFor, type DeploymentRecord } from '../../src/state/store.js';
import { parsePythonJson } from '../../src/util/python-json-parse.js';
import { deployHarness, deployment, installHooks } from '../helpers/deploy-fixtures.js';
import type { TapTest } from '../helpers/http-test-server.js';
import { startPythonJsonOracle } from '../helpers/python-json-oracle.js';
import { startSignalSink } from '../helpers/signal-sink.js';

// Values from a source reach a Python hook and come back in its signal exactly as heat-config (Python's json) would
// carry them: big integers, floats with no fraction, -0.0, 1e400 (Infinity), NaN, lone surrogates. A hook answer
// nested 20,000 levels deep is a clear hook failure: the record ends failed and signalled, never left `running`.

async function setup(t: TapTest) {
  const root = t.testdir();
  const sink = await startSignalSink();
  t.teardown(() => sink.close());
  installHooks(root, { 'py-echo': {} });
  const h = await deployHarness(root);
  const echoDir = path.join(root, 'echo');
  mkdirSync(echoDir);
  const oracle = startPythonJsonOracle();
  t.teardown(() => oracle.close());
  const store = storeFor(h.loaded.config, h.captured.log);
  const env = { ...process.env, PY_ECHO_DIR: echoDir };
  return { root, sink, h, echoDir, oracle, store, env };
}

/** A deployment as a source sends it: text, read by the agent's reader. */
function fromSourceText(text: string): Record<string, unknown> {
  return parsePythonJson(text) as Record<string, unknown>;
}

const EXACT = `{"big": 12345678901234567890, "edge": 9007199254740993, "one": 1.0, "e5": 1E5, "negzero": -0.0,
  "huge": 1e400, "nan": NaN, "lone": "\\ud800x", "pair": "\\ud83d\\ude00", "dup": 1, "dup": 2.50}`;

t.test(
  'hook input and signal carry every value as Python would; 1e400 as hook_timeout is no hook_timeout',
  async (t) => {
    const { sink, h, echoDir, oracle, store, env } = await setup(t);
    const base = deployment({
      id: 'exact-1',
      name: 'exact',
      group: 'py-echo',
      signal: sink.inputs('HEAT_SIGNAL', 'exact-1', 'exact'),
    });
    // The deployment as Heat would send it, with the values above in its config, an input and options.
    const template = JSON.stringify({ ...base, config: { answer: 'PLACEHOLDER' }, options: { hook_timeout: 'HT' } });
    const text = template
      .replace('"PLACEHOLDER"', `{"deploy_stdout": "ok", "deploy_status_code": 0, "values": ${EXACT}}`)
      .replace('"HT"', '1e400')
      .replace('"inputs":[', `"inputs":[{"name": "exact_input", "type": "Json", "value": ${EXACT}},`);
    const report = await runDeployments({ ...h.ctx([fromSourceText(text)]), env });
    t.same(report.ran, ['exact-1']);
    t.same(report.failed, []);

    // The hook's stdin is what heat-config would write: json.dumps of the deployment as Python read it.
    const python = await oracle.roundTrip(text);
    if (!('ok' in python)) throw new Error(python.error);
    const stdin = readFileSync(path.join(echoDir, 'exact-1.stdin'), 'utf8');
    t.equal(stdin, python.ok, 'hook stdin is byte-identical to Python json.dumps of the deployment');
    t.match(stdin, /"big": 12345678901234567890,/);
    t.match(stdin, /"one": 1\.0, "e5": 100000\.0, "negzero": -0\.0, "huge": Infinity, "nan": NaN/);

    // The signal body is what heat-config-notify would post: the hook's answer as Python read it.
    t.equal(sink.received.length, 1);
    const answer = await oracle.roundTrip(
      `{"deploy_stdout": "ok", "deploy_status_code": 0, "values": ${EXACT.replace('1e400', 'Infinity')}}`,
    );
    if (!('ok' in answer)) throw new Error(answer.error);
    t.equal(sink.received[0]?.raw, answer.ok, 'signal body is byte-identical to Python json.dumps of the answer');
    const record = (await store.read('exact-1')) as DeploymentRecord;
    t.equal(record.state, 'signalled');
    t.ok(
      h.captured.lines.some((l) => JSON.stringify(l).includes('hook_timeout Infinity is not a number of seconds')),
      'hook_timeout 1e400 is reported as Infinity and the configured timeout applies',
    );
  },
);

t.test(
  'a hook printing JSON nested 20,000 deep: a clear hook failure, signalled once, never left running',
  async (t) => {
    const { sink, h, store, env } = await setup(t);
    const dep = deployment({
      id: 'deep-1',
      name: 'deep',
      group: 'py-echo',
      config: { deep: 20_000 },
      signal: sink.inputs('HEAT_SIGNAL', 'deep-1', 'deep'),
    });
    const report = await runDeployments({ ...h.ctx([dep]), env });
    t.same(report.ran, ['deep-1']);
    t.match(report.failed, [{ id: 'deep-1' }]);
    const record = (await store.read('deep-1')) as DeploymentRecord;
    t.not(record.state, 'running');
    t.equal(record.failed, true);
    t.equal(sink.received.length, 1, 'signalled once');
    t.match(sink.received[0]?.body, {
      deploy_status_code: 1,
      deploy_stderr: /printed JSON nested deeper than 512 levels; its answer was refused/,
    });
    // A second pass does not run the hook again.
    const again = await runDeployments({ ...h.ctx([dep]), env });
    t.same(again.ran, []);
    t.equal(sink.received.length, 1);
  },
);
