import type { Command } from 'commander';
import { loadConfig, type LoadedConfig } from '../config/load.js';
import type { AgentConfig } from '../config/options.js';
import { AgentError, errorMessage } from '../errors.js';
import { createLogger, parseLogLevel, type Logger } from '../log/logger.js';
import { scrubText } from '../log/redact.js';
import { formatDetail, readDetail } from '../status/detail.js';
import { formatQueuedSignal, readQueuedSignalDetail, verdictOfQueuedSignal } from '../status/queued-signal.js';
import { formatReport } from '../status/format.js';
import { EXIT, readReport, verdictOf, verdictOfDeployment, type Verdict } from '../status/report.js';
import { waitForVerdict } from '../status/wait.js';
import { addCommonFlags, chooseLogLevel, configSources, type CommonFlags } from './common-flags.js';
import { addConfigOptions, readConfigOverrides } from './config-options.js';
import { printData } from './quiet-epipe.js';

// `os-config-agent status [ID|NAME] [--json] [--wait [--timeout SECONDS]]`: the agent, its sources, every deployment
// and the signals not yet delivered (or one deployment's report, which --wait waits for), with an exit code scripts
// can act on (docs/status.md). Reads the state only. Data on stdout; logs (warnings only by default) and errors on
// stderr.

interface StatusFlags extends CommonFlags {
  json?: boolean;
  wait?: boolean;
  timeout?: string;
}

const WAIT_INTERVAL_MS = 1000;

export function defineStatusCommand(cmd: Command, setExit: (code: number) => void): Command {
  addCommonFlags(cmd);
  const bindings = addConfigOptions(cmd);
  cmd.argument(
    '[deployment]',
    'id or name of one deployment: its inputs (secrets masked), outputs, output tails and signal attempts',
  );
  cmd.option('--json', 'print JSON (a versioned shape, see docs/status.md) instead of text');
  cmd.option(
    '--wait',
    'wait until no deployment is pending, running, applied or awaiting its signal (given one: until it is known and finished)',
  );
  cmd.option('--timeout <seconds>', 'with --wait: give up after this many seconds (exit 3); default: no limit');
  cmd.action(async (key: string | undefined) => {
    const flags = cmd.opts<StatusFlags>();
    if (flags.logLevel) parseLogLevel(flags.logLevel);
    const timeoutSeconds = flags.timeout === undefined ? 0 : Number(flags.timeout);
    if (!Number.isFinite(timeoutSeconds) || timeoutSeconds < 0) {
      process.stderr.write(`status: --timeout wants a number of seconds, not "${flags.timeout}"\n`);
      setExit(EXIT.agentOrSignalError);
      return;
    }
    const log = createLogger({ level: 'warn', destination: 'stderr' });
    const loaded = await loadConfig(configSources(flags, readConfigOverrides(cmd, bindings)));
    if (flags.logLevel || flags.debug) log.level = chooseLogLevel(flags, loaded.config.agent.log_level);
    const waiting = { wait: flags.wait === true, timeoutSeconds };
    try {
      setExit(await show(loaded, log, key, flags.json === true, waiting));
    } catch (err) {
      // The state could not be read (permissions, an I/O error): say so, and exit as for an agent error.
      const code = err instanceof AgentError ? ` [${err.code}]` : '';
      process.stderr.write(`status: ${scrubText(errorMessage(err))}${code}\n`);
      setExit(EXIT.agentOrSignalError);
    }
  });
  return cmd;
}

interface Waiting {
  readonly wait: boolean;
  readonly timeoutSeconds: number;
}

/** Prints the report (or one deployment's or signal's); returns the exit status of its verdict. */
async function show(
  loaded: LoadedConfig,
  log: Logger,
  key: string | undefined,
  json: boolean,
  waiting: Waiting,
): Promise<number> {
  if (key !== undefined) {
    const one = await readUntilSettled(() => readOne(loaded.config, log, key, waiting.wait), waiting);
    if (!one.shown) {
      process.stderr.write(`status: ${one.verdict.reasons.join('; ')}\n`);
      return one.verdict.exitCode;
    }
    printData(json ? `${JSON.stringify(one.shown.json, null, 2)}\n` : one.shown.text);
    return one.verdict.exitCode;
  }
  const outcome = await readUntilSettled(async () => {
    const report = await readReport(loaded, log);
    return { report, verdict: verdictOf(report) };
  }, waiting);
  printData(
    json
      ? `${JSON.stringify({ ...outcome.report, result: outcome.verdict }, null, 2)}\n`
      : formatReport(outcome.report, outcome.verdict),
  );
  return outcome.verdict.exitCode;
}

/** With --wait, read again every second until the verdict is no longer "still in progress" (or the time is up). */
async function readUntilSettled<R extends { readonly verdict: Verdict }>(
  read: () => Promise<R>,
  waiting: Waiting,
): Promise<R> {
  if (!waiting.wait) return read();
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGINT', onSignal).once('SIGTERM', onSignal);
  try {
    return await waitForVerdict(read, {
      timeoutMs: waiting.timeoutSeconds * 1000,
      intervalMs: WAIT_INTERVAL_MS,
      signal: stop.signal,
    });
  } finally {
    process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
  }
}

interface OneReading {
  readonly verdict: Verdict;
  /** What to print (as --json, or as text); absent when nothing with that id or name is known. */
  readonly shown?: { readonly json: unknown; readonly text: string };
}

/**
 * One deployment (by id or name) or one queued signal (by id), and its verdict. Something nobody has heard of is an
 * error (exit 2) for a plain `status <id|name>`, but with --wait it is still to come: Heat adds a deployment to the
 * server's metadata only once its resource is created (after the server, and after whatever it depends on), so a
 * script started at boot can name a deployment the agent has not collected yet.
 */
async function readOne(config: AgentConfig, log: Logger, key: string, waiting: boolean): Promise<OneReading> {
  const found = await readDetail(config, log, key);
  if (found.ok)
    return {
      verdict: verdictOfDeployment(found.detail.deployment),
      shown: { json: found.detail, text: formatDetail(found.detail) },
    };
  if (found.unknown) {
    const queued = await readQueuedSignalDetail(config, key);
    if (queued)
      return { verdict: verdictOfQueuedSignal(queued), shown: { json: queued, text: formatQueuedSignal(queued) } };
    if (waiting)
      return { verdict: { exitCode: EXIT.waiting, reasons: [`no deployment with id or name "${key}" is known yet`] } };
  }
  return { verdict: { exitCode: EXIT.agentOrSignalError, reasons: [found.message] } };
}
