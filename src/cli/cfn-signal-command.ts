import { Option, type Command } from 'commander';
import { loadConfig, type LoadedConfig } from '../config/load.js';
import { logProblems } from '../config/log-problems.js';
import { daemonPresenceFile, runningDaemon } from '../status/daemon-presence.js';
import { isDueSignal, type QueuedSignal } from '../signals/cfn-signal-queue/entry.js';
import { enqueueSignal, readQueuedSignal } from '../signals/cfn-signal-queue/files.js';
import { attemptIfDue, queueDepsFor, type QueueDeps } from '../signals/cfn-signal-queue/send.js';
import { SignalInputError } from '../heat/wait-condition-body.js';
import { createLogger, type Logger } from '../log/logger.js';
import { registerSecret } from '../log/redact.js';
import type { CommandContext } from './command-context.js';
import { oneAttemptHttpClient } from './command-http.js';
import {
  commonFlagsOf,
  configureLogger,
  configSources,
  COMMON_HEADING,
  logLevelArgument,
  type CommonFlags,
} from './common-flags.js';
import { installSignalHandlers } from './process-signals.js';
import { addRootConfigFlags } from './root-flags.js';
import { checkFlags, signalInput, type CfnSignalFlags, type SignalInput } from './signal-input.js';
import { defaultUniqueId } from './signal-unique-id.js';

// `os-config-agent cfn-signal [flags] URL` and the compatibility command `cfn-signal`: heat-cfntools' cfn-signal (same
// flags, same body), except that the signal goes into the agent's durable queue (src/signals/cfn-signal-queue/) and
// the daemon delivers it, with retries, across network outages and restarts. With no daemon running, the command tries
// once itself; --now tries once at once anyway; --wait stays until the signal is delivered or refused. Exit codes:
//   0  delivered, or queued with a daemon running to deliver it
//   1  refused for good (a 4xx such as an expired signature), or nothing could be queued (local failure)
//   2  usage or bad input (no URL, a bad URL, data over the limit, --body not a JSON object): nothing queued
//   3  queued but not delivered: --wait ran out of time, or no daemon runs and the attempt failed
// Logs (warnings only, by default) go to stderr; nothing goes to stdout.

export const EXIT_QUEUED_NOT_SENT = 3;
const WAIT_POLL_MS = 200;

interface CommandFlags extends CfnSignalFlags, CommonFlags {
  now?: boolean;
  wait?: boolean;
  waitTimeout?: string;
}

export function defineCfnSignalCommand(cmd: Command, ctx: CommandContext, name = 'os-config-agent'): Command {
  const setExit = ctx.setExit;
  addCfnSignalOptions(cmd);
  cmd.action(async (url: string) => {
    const flags = commonFlagsOf<CommandFlags>(cmd);
    const say = (line: string) => process.stderr.write(`${name}: ${line}\n`);
    if (flags.token) registerSecret(flags.token);
    // Only what the user set counts: commander's defaults stand for cfn-signal's, applied in signalInput.
    const given = givenFlags(cmd, flags);
    const waitSeconds = Number(flags.waitTimeout);
    try {
      checkFlags(url, given);
      if (!Number.isFinite(waitSeconds) || waitSeconds < 0)
        throw new SignalInputError('--wait-timeout must be a number of seconds, 0 or more');
    } catch (err) {
      return usage(err, say, setExit, true);
    }
    const log = createLogger({ level: 'warn', destination: 'stderr' });
    const loaded = await loadConfig(configSources(flags, {}));
    logProblems(loaded, log);
    if (flags.logLevel || flags.debug) configureLogger(log, flags, loaded.config.agent);
    let input;
    try {
      input = await signalInput(url, given, () => defaultUniqueId(loaded));
    } catch (err) {
      return usage(err, say, setExit);
    }
    if (given.exit !== undefined) log.warn('--exit is deprecated; use -e or --exit-code');
    setExit(await queueAndDeliver(input, loaded, log, { ...flags, waitSeconds }, say));
  });
  return cmd;
}

function addCfnSignalOptions(cmd: Command): void {
  cmd
    .argument('<url>', "the WaitConditionHandle URL (pre-signed CFN URL, or the native handle's endpoint with --token)")
    .option('-s, --success <bool>', 'signal status: "true" is SUCCESS, anything else FAILURE', 'true')
    .option('-r, --reason <text>', 'the reason sent with the signal', 'Configuration Complete')
    .option('-d, --data <text>', 'the data sent with the signal', 'Application has completed configuration.')
    .option('--data-file <file>', 'send the contents of FILE as the data ("-": standard input)')
    .option('-i, --id <id>', "the unique id of this signal (default: the server's uuid, else its host name)")
    .option('-e, --exit-code <code>', 'an exit code to report: "0" is SUCCESS, anything else FAILURE (wins over -s)')
    .addOption(new Option('--exit <code>', 'deprecated spelling of --exit-code').hideHelp())
    .option('-k, --insecure', "do not verify the server's TLS certificate")
    .option(
      '--token <token>',
      "Heat's native handle: POST with this X-Auth-Token (the handle's token attribute), as its curl_cli does",
    )
    .option(
      '--body <json>',
      "Heat's native handle: the whole JSON body, as given to curl --data-binary (keys status, reason, data, id)",
    )
    .option('--now', 'also try to deliver once before returning (the queue keeps retrying on failure)')
    .option('--wait', 'stay until the signal is delivered or refused (exit 0 or 1), or --wait-timeout passes (exit 3)')
    .option('--wait-timeout <seconds>', 'how long --wait waits', '300');
  addRootConfigFlags(cmd).addOption(
    new Option('--log-level <level>', 'fatal, error, warn, info, debug or trace (default: warn)')
      .argParser(logLevelArgument)
      .helpGroup(COMMON_HEADING),
  );
}

/** Queues the signal, tries it as the flags and a running daemon say, and returns the exit status. */
async function queueAndDeliver(
  input: SignalInput,
  loaded: LoadedConfig,
  log: Logger,
  flags: { now?: boolean | undefined; wait?: boolean | undefined; waitSeconds: number },
  say: (line: string) => void,
): Promise<number> {
  const { config } = loaded;
  const http = oneAttemptHttpClient(loaded, log);
  const handlers = installSignalHandlers(log);
  try {
    const deps = queueDepsFor(config, http, log.child({ component: 'cfn-signal' }), { signal: handlers.signal });
    const entry = await enqueueSignal(deps.dir, input, deps.policy.now());
    log.info({ signalId: entry.id, kind: entry.kind, destination: entry.shownUrl }, 'signal queued');
    const daemon = await runningDaemon(daemonPresenceFile(config));
    let current: QueuedSignal | undefined = entry;
    if (flags.now || flags.wait || daemon === undefined) current = await attemptIfDue(deps, entry.id);
    if (flags.wait)
      current = await waitUntilSettled(deps, entry.id, performance.now() + flags.waitSeconds * 1000, handlers.signal);
    return outcome(current, entry.id, { daemon, waited: flags.wait === true, waitSeconds: flags.waitSeconds }, say);
  } finally {
    handlers.dispose();
  }
}

/** The signal flags the user gave (not commander's defaults). */
function givenFlags(cmd: Command, flags: CommandFlags): CfnSignalFlags {
  const out: CfnSignalFlags = {};
  for (const key of [
    'success',
    'reason',
    'data',
    'dataFile',
    'id',
    'exitCode',
    'exit',
    'insecure',
    'token',
    'body',
  ] as const) {
    if (flags[key] !== undefined && cmd.getOptionValueSource(key) !== 'default')
      (out as Record<string, unknown>)[key] = flags[key];
  }
  return out;
}

/** A usage error (exit 2). Everything the flag checks throw is one (a bad --log-level too); elsewhere only SignalInputError. */
function usage(err: unknown, say: (line: string) => void, setExit: (code: number) => void, anyError = false): void {
  if (!(err instanceof SignalInputError) && !(anyError && err instanceof Error)) throw err;
  say(`${err.message}; nothing was queued`);
  setExit(2);
}

/** Poll the signal's file until it is settled (attempting it when due), the deadline passes or the process is stopped. */
async function waitUntilSettled(
  deps: QueueDeps,
  id: string,
  deadline: number,
  stop: AbortSignal,
): Promise<QueuedSignal | undefined> {
  let current = await readQueuedSignal(deps.dir, id);
  while (current?.state === 'pending' && performance.now() < deadline && !stop.aborted) {
    if (isDueSignal(current, deps.policy.now(), deps.policy.maxBackoffSeconds)) current = await attemptIfDue(deps, id);
    if (current?.state !== 'pending') break;
    const dueIn = current.nextAttemptAt ? Date.parse(current.nextAttemptAt) - Date.now() : WAIT_POLL_MS;
    await sleep(Math.max(10, Math.min(WAIT_POLL_MS, dueIn, deadline - performance.now())), stop);
    current = await readQueuedSignal(deps.dir, id);
  }
  return current;
}

function sleep(ms: number, stop: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      stop.removeEventListener('abort', done);
      resolve();
    }
    stop.addEventListener('abort', done, { once: true });
  });
}

function outcome(
  signal: QueuedSignal | undefined,
  id: string,
  how: { daemon: number | undefined; waited: boolean; waitSeconds: number },
  say: (line: string) => void,
): number {
  if (signal?.state === 'sent') return 0;
  if (signal?.state === 'failed') {
    say(`the signal was not delivered: ${signal.lastError ?? 'refused'}`);
    return 1;
  }
  const noDaemon =
    how.daemon === undefined
      ? '; no os-config-agent daemon is running, so it is sent when the agent starts'
      : '; the daemon keeps trying';
  if (how.waited) {
    say(
      `the signal was not delivered within ${how.waitSeconds} s (${signal?.lastError ?? 'not attempted yet'}); it stays queued as ${id}${noDaemon}`,
    );
    return EXIT_QUEUED_NOT_SENT;
  }
  if (how.daemon !== undefined) return 0;
  say(`the signal is queued as ${id} but not delivered (${signal?.lastError ?? 'not attempted'})${noDaemon}`);
  return EXIT_QUEUED_NOT_SENT;
}
