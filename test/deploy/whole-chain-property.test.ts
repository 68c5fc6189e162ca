import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import t from 'tap';
import { MetadataCache } from '../../src/cache/metadata-cache.js';
import { runDeployments } from '../../src/deploy/dispatch.js';
import { storeFor, type DeploymentRecord } from '../../src/state/store.js';
import { isJsonObject } from '../../src/util/json-merge.js';
import { parsePythonJson } from '../../src/util/python-json-parse.js';
import { deployHarness, deployment, installHooks } from '../helpers/deploy-fixtures.js';
import { jsonValueText } from '../helpers/json-arbitraries.js';
import { startPythonJsonOracle, type PythonJsonOracle } from '../helpers/python-json-oracle.js';
import { startSignalSink } from '../helpers/signal-sink.js';

// Generated metadata documents (numbers of every form, unicode with lone surrogates, repeated keys, nesting, ids,
// names and secrets) through the chain collect (the agent's reader) -> cache -> read back -> deploy (a Python hook) ->
// signal, with invariants checked each time against python3 itself:
//   - the cache file is byte-identical to Python's json.dumps(json.loads(source), indent=1)
//   - each listed deployment runs once, is signalled once, and its record ends `signalled`
//   - the hook's stdin and the signal body are byte-identical to what Python's json would carry
//   - no secret input value reaches any log line; nothing is written outside the root
// Bounded: a fixed number of runs; the seed is printed (and fast-check prints it again on failure) so a failure can be
// replayed with OCA_PROPERTY_SEED (OCA_PROPERTY_RUNS for a longer soak).

const RUNS = Number(process.env.OCA_PROPERTY_RUNS ?? 12);
const SEED = Number(process.env.OCA_PROPERTY_SEED ?? Date.now() % 2 ** 31);

interface Generated {
  readonly extra: string;
  readonly deployments: ReadonlyArray<{ id: string; name: string; value: string; answer: string; secret: string }>;
}

const safeId = fc.stringMatching(/^[a-z0-9][a-z0-9-]{0,15}$/);
const generated: fc.Arbitrary<Generated> = fc.record({
  extra: jsonValueText(),
  deployments: fc.uniqueArray(
    fc.record({
      id: safeId,
      // Heat's resource names are never empty (an empty deploy_resource_name cannot be signalled). Nor "." or "..":
      // WHATWG URL parsing drops such a path segment, even percent-encoded ("%2E"), so the signal address of such a
      // resource cannot be written as a URL.
      name: fc.string({ minLength: 1, maxLength: 12 }).filter((n) => n !== '.' && n !== '..'),
      value: jsonValueText(),
      answer: jsonValueText(),
      secret: fc.stringMatching(/^[A-Za-z0-9]{12,20}$/).map((s) => `Sx${s}`),
    }),
    // Ids and resource names both unique, as in a stack: Heat signals a deployment through its resource's name, and
    // two deployments named alike would share one signal address (the sink could not tell whose body it got).
    { minLength: 1, maxLength: 3, comparator: (a, b) => a.id === b.id || a.name === b.name },
  ),
});

/** A deployment's text as a source sends it: the generated value as an input, the answer in its config. */
function deploymentText(d: Generated['deployments'][number], signalInputs: unknown[]): string {
  const base = deployment({ id: d.id, name: d.name, group: 'py-echo', signal: signalInputs as never });
  const skeleton = JSON.stringify({
    ...base,
    config: { answer: 'ANSWER' },
    inputs: [
      { name: 'generated', type: 'Json', value: 'VALUE' },
      { name: 'db_password', type: 'String', value: d.secret },
      ...(base.inputs as unknown[]),
    ],
  });
  return skeleton
    .replace('"ANSWER"', `{"deploy_status_code": 0, "deploy_stdout": "ok", "generated": ${d.answer}}`)
    .replace('"VALUE"', d.value);
}

/**
 * Fails the property with what differed, from 100 characters before the first difference (fast-check reports the
 * message with the counterexample).
 */
function same(actual: unknown, expected: unknown, what: string): void {
  if (actual === expected) return;
  const [a, e] = [String(actual), String(expected)];
  let at = 0;
  while (at < a.length && a[at] === e[at]) at++;
  const from = Math.max(0, at - 100);
  const shown = (text: string) => JSON.stringify(text.slice(from, at + 300));
  throw new Error(`${what}, from character ${from}: got ${shown(a)}\nexpected ${shown(e)}`);
}

async function python(oracle: PythonJsonOracle, text: string, indent?: number): Promise<string> {
  const answer = await oracle.roundTrip(text, indent);
  if ('ok' in answer) return answer.ok;
  throw new Error(`python3 refused a generated document (${answer.error}): ${text.slice(0, 200)}`);
}

t.test('generated documents through collect, cache, deploy and signal carry as Python would', async (t) => {
  t.comment(`fast-check seed ${SEED} (replay with OCA_PROPERTY_SEED=${SEED})`);
  const top = t.testdir();
  const root = path.join(top, 'root');
  const oracle = startPythonJsonOracle();
  t.teardown(() => oracle.close());
  const sink = await startSignalSink();
  t.teardown(() => sink.close());
  await fc.assert(
    fc.asyncProperty(generated, async (g) => {
      rmSync(root, { recursive: true, force: true });
      mkdirSync(root, { recursive: true });
      installHooks(root, { 'py-echo': {} });
      const h = await deployHarness(root);
      const echoDir = path.join(root, 'echo');
      mkdirSync(echoDir);
      const env = { ...process.env, PY_ECHO_DIR: echoDir };
      const received = sink.received.length;
      const texts = g.deployments.map((d) => deploymentText(d, sink.inputs('HEAT_SIGNAL', d.id, d.name)));
      const source = `{"extra": ${g.extra}, "deployments": [${texts.join(', ')}]}`;

      // collect -> cache: the file is what os-collect-config would write.
      const collected = parsePythonJson(source);
      const cache = new MetadataCache(path.join(root, 'var/lib/os-collect-config'), h.captured.log);
      await cache.ensureDir();
      const stored = await cache.store('heat', collected);
      const cacheText = readFileSync(stored.path, 'utf8');
      same(cacheText, await python(oracle, source, 1), 'cache file');

      // cache -> deploy -> signal
      const readBack = parsePythonJson(cacheText);
      if (!isJsonObject(readBack)) throw new Error('the cache file read back is not an object');
      const report = await runDeployments({ ...h.ctx(readBack.deployments as unknown[]), env });
      same(
        JSON.stringify([report.ran.length, report.failed]),
        JSON.stringify([g.deployments.length, []]),
        'ran, failed',
      );
      const bodies = sink.received.slice(received);
      same(
        bodies.length,
        g.deployments.length,
        `signals (${JSON.stringify(h.captured.lines.filter((l) => l.level === 'error').map((l) => l.msg))})`,
      );
      const store = storeFor(h.loaded.config, h.captured.log);
      for (const [i, d] of g.deployments.entries()) {
        const stdin = readFileSync(path.join(echoDir, `${d.id}.stdin`), 'utf8');
        same(stdin, await python(oracle, texts[i] as string), `hook stdin of ${d.id}`);
        const body = bodies.find((b) => b.id === d.id);
        const expected = `{"deploy_status_code": 0, "deploy_stdout": "ok", "generated": ${d.answer}}`;
        same(body?.raw, await python(oracle, expected), `signal body of ${d.id}`);
        same(((await store.read(d.id)) as DeploymentRecord).state, 'signalled', `state of ${d.id}`);
        // No secret in any log line.
        same(h.captured.lines.filter((l) => JSON.stringify(l).includes(d.secret)).length, 0, 'log lines with a secret');
      }
      // Nothing written outside the root.
      same(readdirSync(top).join(), 'root', 'entries beside the root');
    }),
    { numRuns: RUNS, seed: SEED, endOnFailure: true },
  );
});
