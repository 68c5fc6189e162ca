import { InvalidArgumentError, type Command } from 'commander';
import { loadConfig, type LoadedConfig } from '../config/load.js';
import { AgentError, errorMessage } from '../errors.js';
import { createLogger, type Logger } from '../log/logger.js';
import { scrubText } from '../log/redact.js';
import { formatDetail, readDetail } from '../status/detail.js';
import { formatQueuedSignal, readQueuedSignalDetail, verdictOfQueuedSignal } from '../status/queued-signal.js';
import { formatReport } from '../status/format.js';
import { readAgent, readReport, verdictOfDeployment, type AgentSummary } from '../status/report.js';
import { outputWidth } from '../status/text-table.js';
import { EXIT, verdictOf, type Verdict } from '../status/verdict.js';
import { waitForVerdict } from '../status/wait.js';
import type { CommandContext } from './command-context.js';
import {
  addCommonFlags,
  commonFlagsOf,
  configureLogger,
  configSources,
  COMMON_HEADING,
  type CommonFlags,
} from './common-flags.js';
import { addConfigOptions, readConfigOverrides } from './config-options.js';
import { addExitStatus } from './help-notes.js';
import { existingRoot } from './root-check.js';
import { printData } from './quiet-epipe.js';

// `os-config-agent status [ID|NAME] [--json] [--wait [--timeout SECONDS]]`: the agent, its sources, every deployment
// and the signals not yet delivered (or one deployment's report, which --wait waits for), with an exit code scripts
// can act on (docs/status.md). Reads the state only. Data on stdout; logs (warnings only by default) and errors on
// stderr.

interface StatusFlags extends CommonFlags {
  json?: boolean;
  wait?: boolean;
  timeout?: number;
}

const WAIT_INTERVAL_MS = 1000;

function seconds(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 0)
    throw new InvalidArgumentError(`--timeout wants a number of seconds, not "${value}"`);
  return n;
}

export function defineStatusCommand(cmd: Command, ctx: CommandContext): Command {
  cmd.argument(
    '[deployment]',
    'id or name of one deployment (or queued signal): its inputs (secrets masked), outputs, output tails and signal attempts',
  );
  cmd.option('--json', 'print JSON (a versioned shape, see status.md) instead of text');
  cmd.option(
    '--wait',
    'wait until nothing is pending, running or awaiting its signal, or something failed; with no agent running, give up at once (given a deployment: wait for it to be known and finished)',
  );
  cmd.option(
    '--timeout <seconds>',
    'with --wait: give up after this many seconds (exit 3); default: no limit',
    seconds,
  );
  addCommonFlags(cmd, COMMON_HEADING);
  // What status reads: the metadata cache (whether the agent ever ran), the state and the deployed directories.
  const bindings = addConfigOptions(cmd, {
    scope: { DEFAULT: ['cachedir'], agent: ['state_dir'], deploy: ['deployed_dir'] },
    helpAll: ctx.helpAll,
  });
  addExitStatus(cmd, [
    'Exit status: 0 all done and signalled, 1 a deployment failed, 2 an error (a signal',
    'refused, no agent to finish the work, an unknown deployment), 3 still in progress.',
    'Details: status.md in the documentation.',
  ]);
  cmd.action(async (key: string | undefined) => {
    const flags = commonFlagsOf<StatusFlags>(cmd);
    if (flags.timeout !== undefined && !flags.wait) cmd.error('--timeout is for --wait: add --wait, or leave it out');
    const log = createLogger({ level: 'warn', destination: 'stderr' });
    const root = existingRoot(flags.root);
    if (!root.ok) {
      process.stderr.write(`status: ${root.message}\n`);
      ctx.setExit(EXIT.agentOrSignalError);
      return;
    }
    const loaded = await loadConfig(configSources(flags, readConfigOverrides(cmd, bindings)));
    if (flags.logLevel || flags.debug) configureLogger(log, flags, loaded.config.agent);
    try {
      ctx.setExit(key !== undefined ? await showOne(loaded, log, key, flags) : await showReport(loaded, log, flags));
    } catch (err) {
      // The state could not be read (permissions, an I/O error): say so, and exit as for an agent error.
      const code = err instanceof AgentError ? ` [${err.code}]` : '';
      process.stderr.write(`status: ${scrubText(errorMessage(err))}${code}\n`);
      ctx.setExit(EXIT.agentOrSignalError);
    }
  });
  return cmd;
}

/** `status`: the whole report, printed (after --wait, if asked); the exit code of its verdict. */
async function showReport(loaded: LoadedConfig, log: Logger, flags: StatusFlags): Promise<number> {
  const width = flags.json ? undefined : outputWidth(process.env, process.stdout);
  const outcome = await readUntilSettled(flags, async () => {
    const report = await readReport(loaded, log);
    return { report, verdict: verdictOf(report) };
  });
  if (flags.wait && !outcome.report.agent.running && outcome.verdict.exitCode === EXIT.agentOrSignalError)
    process.stderr.write(
      'status: no os-config-agent daemon is running, so there is nothing to wait for; start it, or wait for one deployment by name (status NAME --wait)\n',
    );
  printData(
    flags.json
      ? `${JSON.stringify({ ...outcome.report, result: outcome.verdict }, null, 2)}\n`
      : formatReport(outcome.report, outcome.verdict, width),
  );
  return outcome.verdict.exitCode;
}

/** With --wait, read again every second until the verdict is no longer "still in progress" (or the time is up). */
async function readUntilSettled<R extends { readonly verdict: Verdict }>(
  flags: StatusFlags,
  read: () => Promise<R>,
): Promise<R> {
  if (!flags.wait) return read();
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGINT', onSignal).once('SIGTERM', onSignal);
  try {
    return await waitForVerdict(read, {
      timeoutMs: (flags.timeout ?? 0) * 1000,
      intervalMs: WAIT_INTERVAL_MS,
      signal: stop.signal,
    });
  } finally {
    process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
  }
}

/** `status <id|name>`: one deployment or queued signal, printed; its exit code. */
async function showOne(loaded: LoadedConfig, log: Logger, key: string, flags: StatusFlags): Promise<number> {
  const waiting = flags.wait === true;
  if (waiting && !(await readAgent(loaded)).agent.running)
    process.stderr.write(
      `status: no os-config-agent daemon is running; waiting for "${key}" until one runs and finishes it${flags.timeout === undefined ? ' (--timeout bounds the wait)' : ''}\n`,
    );
  const one = await readUntilSettled(flags, () => readOne(loaded, log, key, waiting));
  if (!one.shown) {
    process.stderr.write(`status: ${one.verdict.reasons.join('; ')}\n`);
    return one.verdict.exitCode;
  }
  printData(flags.json ? `${JSON.stringify(one.shown.json, null, 2)}\n` : one.shown.text);
  return one.verdict.exitCode;
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
 * script started at boot can name a deployment the agent has not collected yet, maybe before the agent runs.
 */
async function readOne(loaded: LoadedConfig, log: Logger, key: string, waiting: boolean): Promise<OneReading> {
  const { config } = loaded;
  const agent: AgentSummary = (await readAgent(loaded)).agent;
  const options = { awaitAgent: waiting };
  const found = await readDetail(config, log, key);
  if (found.ok)
    return {
      verdict: verdictOfDeployment(found.detail.deployment, agent, options),
      shown: { json: found.detail, text: formatDetail(found.detail) },
    };
  if (found.unknown) {
    const queued = await readQueuedSignalDetail(config, key);
    if (queued)
      return {
        verdict: verdictOfQueuedSignal(queued, agent, options),
        shown: { json: queued, text: formatQueuedSignal(queued) },
      };
    if (waiting)
      return {
        verdict: {
          exitCode: EXIT.waiting,
          summary: 'still in progress',
          reasons: [`no deployment with id or name "${key}" is known yet`],
        },
      };
  }
  return { verdict: { exitCode: EXIT.agentOrSignalError, summary: 'unknown', reasons: [found.message] } };
}
