import type { AgentConfig } from '../config/options.js';
import type { Logger } from '../log/logger.js';
import { scrubText, scrubValue, setSecrets } from '../log/redact.js';
import { isSecretName } from '../log/secret-names.js';
import { isJsonObject, type JsonObject } from '../util/json-merge.js';
import { isSafeFileName } from '../util/safe-name.js';
import { terminalText } from '../util/terminal-text.js';
import { inputText, isSecretInput } from '../heat/deployment.js';
import { DeploymentRecordError } from '../state/errors.js';
import { storeFor, type DeploymentRecord, type SignalAttempt, type StateStore } from '../state/store.js';
import { reconvergeIntervalOf, reconvergeOption } from '../heat/reconverge-option.js';
import { canReconverge, reconvergeDueAt } from '../state/reconverge-record.js';
import { rerunDetailLines, type RerunSchedule } from './reconverge.js';
import { toStatus, type DeploymentStatus } from './status.js';
import { count } from './text-table.js';
import { resultText } from './format.js';
import { deploymentSecrets, readObject } from './deployment-secrets.js';

// `status <id|name>`: one deployment's report, from its record, deployed/<id>.json (inputs, options) and
// deployed/<id>.notify.json (the signal body: output tails and outputs). Secret inputs are masked; output text is
// cut to its tail. Read only: a corrupt record is reported, not set aside.

export const MASK = '******';
/** The owner of the secrets `status <id>` registers: the one deployment it shows. */
const DETAIL_OWNER = 'status-detail';
const TAIL_LINES = 20;
const TAIL_CHARS = 4000;
const VALUE_CHARS = 2000;

export interface DeploymentDetail {
  readonly version: 1;
  readonly deployment: DeploymentStatus;
  readonly inputs: readonly { readonly name: string; readonly value: unknown }[];
  readonly options: JsonObject;
  readonly durationSeconds?: number;
  readonly stdoutTail?: string;
  readonly stderrTail?: string;
  readonly outputs: JsonObject;
  readonly signalAttempts: readonly SignalAttempt[];
  /** Its re-runs on a reconverge interval: when, and the ends of the last one's output. */
  readonly rerun?: RerunSchedule & { readonly stdoutTail?: string; readonly stderrTail?: string };
}

/** `unknown`: no record has that id or name (yet: `status --wait` waits for it to appear). */
export type DetailLookup =
  | { readonly ok: true; readonly detail: DeploymentDetail }
  | { readonly ok: false; readonly unknown: boolean; readonly message: string };

export async function readDetail(config: AgentConfig, log: Logger, key: string): Promise<DetailLookup> {
  const store = storeFor(config, log);
  let record: DeploymentRecord | undefined;
  try {
    record = isSafeFileName(key) ? await store.read(key) : undefined;
  } catch (err) {
    if (err instanceof DeploymentRecordError) return { ok: false, unknown: false, message: err.message };
    throw err;
  }
  if (!record) {
    const named = (await store.list(true)).filter((r) => r.name === key);
    if (named.length > 1)
      return {
        ok: false,
        unknown: false,
        message: `${named.length} deployments are named "${key}": ${named.map((r) => r.id).join(', ')}; give the id`,
      };
    record = named[0];
  }
  if (!record)
    return {
      ok: false,
      unknown: true,
      message: `no deployment with id or name "${key}" is known; "os-config-agent status" lists them`,
    };
  return { ok: true, detail: await detailOf(store, record, config) };
}

async function detailOf(store: StateStore, record: DeploymentRecord, config: AgentConfig): Promise<DeploymentDetail> {
  const deployed = await readObject(store.deployedPath(record.id));
  const body = await readObject(store.notifyPath(record.id));
  const given = Array.isArray(deployed?.inputs) ? deployed.inputs.filter(isJsonObject) : [];
  // The values of its secret inputs and outputs join the registry the logs scrub with, so a tail or an output that
  // prints one (a hook echoing db_password or the api_token it hands back) shows [REDACTED] here as in the journal.
  setSecrets(DETAIL_OWNER, deploymentSecrets(deployed, body));
  const inputs = given.map(shownInput);
  const outputs: JsonObject = {};
  for (const [k, v] of Object.entries(body ?? {}))
    if (!k.startsWith('deploy_')) outputs[k] = isSecretName(k) ? MASK : bounded(v);
  const started = record.startedAt ? Date.parse(record.startedAt) : NaN;
  const ended = record.endedAt ? Date.parse(record.endedAt) : NaN;
  return {
    version: 1,
    deployment: toStatus(record),
    inputs,
    options: isJsonObject(deployed?.options) ? (scrubValue(deployed.options) as JsonObject) : {},
    ...(Number.isFinite(started) && Number.isFinite(ended)
      ? { durationSeconds: Math.round(ended - started) / 1000 }
      : {}),
    ...(typeof body?.deploy_stdout === 'string' ? { stdoutTail: tail(body.deploy_stdout) } : {}),
    ...(typeof body?.deploy_stderr === 'string' ? { stderrTail: tail(body.deploy_stderr) } : {}),
    outputs,
    signalAttempts: (record.signal.history ?? []).map((a) => (a.error ? { ...a, error: scrubText(a.error) } : a)),
    ...(await rerunOf(store, record, deployed, config)),
  };
}

/** The re-run schedule (from the deployed document and the configuration) and the last re-run's output. */
async function rerunOf(
  store: StateStore,
  record: DeploymentRecord,
  deployed: JsonObject | undefined,
  config: AgentConfig,
): Promise<Pick<DeploymentDetail, 'rerun'>> {
  const group = typeof deployed?.group === 'string' ? deployed.group : record.group;
  const intervalSeconds = reconvergeIntervalOf({ group, reconverge: reconvergeOption(deployed?.options) }, config);
  const output = await readObject(store.reconvergePath(record.id));
  const rerun = {
    ...(intervalSeconds !== undefined ? { intervalSeconds } : {}),
    ...(intervalSeconds !== undefined && canReconverge(record)
      ? { nextAt: new Date(reconvergeDueAt(record, intervalSeconds, Date.now())).toISOString() }
      : {}),
    ...(typeof output?.stdout === 'string' ? { stdoutTail: tail(output.stdout) } : {}),
    ...(typeof output?.stderr === 'string' ? { stderrTail: tail(output.stderr) } : {}),
  };
  return Object.keys(rerun).length > 0 || record.reconverge !== undefined ? { rerun } : {};
}

function shownInput(input: JsonObject): { name: string; value: unknown } {
  const name = typeof input.name === 'string' ? input.name : '';
  return { name, value: isSecretInput(name) ? MASK : bounded(input.value) };
}

/** A value as stored (scrubbed), or its text cut short when it is long (a script, a certificate bundle). */
function bounded(value: unknown): unknown {
  const text = inputText(value);
  if (text.length <= VALUE_CHARS) return scrubValue(value ?? null);
  return `${scrubText(text.slice(0, VALUE_CHARS))}… (${text.length} characters)`;
}

function tail(text: string): string {
  const lines = text.split('\n');
  let out = lines.slice(-TAIL_LINES - (lines.at(-1) === '' ? 1 : 0)).join('\n');
  if (out.length > TAIL_CHARS) out = out.slice(-TAIL_CHARS);
  return scrubText(out);
}

/** The report as text. */
export function formatDetail(d: DeploymentDetail): string {
  const s = d.deployment;
  const lines = [
    `deployment ${s.id} (${s.name})`,
    `  group: ${s.group}   action: ${s.action}   state: ${s.state}${s.adopted ? ' (adopted)' : ''}`,
    `  hook: ${s.hook ?? '-'}   starts: ${s.hookStarts}`,
    `  seen: ${s.firstSeenAt}   started: ${s.startedAt ?? '-'}   ended: ${s.endedAt ?? '-'}${d.durationSeconds !== undefined ? ` (${d.durationSeconds} s)` : ''}`,
    `  result: ${resultText(s)}   deploy_status_code: ${s.statusCode ?? '-'}   hook exit: ${s.exitCode ?? '-'}`,
    `  signal: ${s.signal.state} via ${s.signal.transport}, ${count(s.signal.attempts, 'attempt')}${s.signal.sentAt ? `, sent ${s.signal.sentAt}` : ''}${s.signal.nextAttemptAt ? `, next ${s.signal.nextAttemptAt}` : ''}`,
  ];
  if (s.lastError) lines.push(`  last error: ${s.lastError}`);
  lines.push(...rerunDetailLines(s.reconverge, d.rerun ?? {}));
  lines.push(
    'inputs:',
    ...(d.inputs.length > 0 ? d.inputs.map((i) => `  ${i.name} = ${oneValue(i.value)}`) : ['  (none)']),
  );
  lines.push(
    'options:',
    ...(Object.keys(d.options).length > 0
      ? Object.entries(d.options).map(([k, v]) => `  ${k} = ${oneValue(v)}`)
      : ['  (none)']),
  );
  lines.push(
    'outputs:',
    ...(Object.keys(d.outputs).length > 0
      ? Object.entries(d.outputs).map(([k, v]) => `  ${k} = ${oneValue(v)}`)
      : ['  (none)']),
  );
  lines.push(
    'signal attempts:',
    ...(d.signalAttempts.length > 0
      ? d.signalAttempts.map(
          (a) =>
            `  ${a.at}  ${a.outcome}${a.status !== undefined ? ` (HTTP ${a.status})` : ''}${a.error ? `: ${a.error}` : ''}`,
        )
      : ['  (none recorded)']),
  );
  lines.push(
    `stdout (last ${TAIL_LINES} lines):`,
    ...indent(d.stdoutTail),
    `stderr (last ${TAIL_LINES} lines):`,
    ...indent(d.stderrTail),
  );
  if (s.reconverge?.last !== undefined)
    lines.push(
      `last re-run's stdout (last ${TAIL_LINES} lines):`,
      ...indent(d.rerun?.stdoutTail),
      `last re-run's stderr (last ${TAIL_LINES} lines):`,
      ...indent(d.rerun?.stderrTail),
    );
  // One entry per line: names, errors and output from the deployment are shown escaped, so none fakes a line.
  return `${lines.map(terminalText).join('\n')}\n`;
}

function oneValue(v: unknown): string {
  const text = typeof v === 'string' ? v : JSON.stringify(v);
  return text.replace(/\n/g, '\\n');
}

function indent(text: string | undefined): string[] {
  if (text === undefined || text === '') return ['  (empty)'];
  return text
    .replace(/\n$/, '')
    .split('\n')
    .map((l) => `  | ${l}`);
}
