import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { installBuiltinHooks } from '../../helpers/bundle.js';
import { guardGroup, stopGroup } from './processes.js';

// "The instance" of a real-Heat scenario: a directory standing in for a machine's root, holding only what a cold
// boot has — the heat_local data Heat's cloud-init part-handler writes (cfn-init-data with the server's
// os-collect-config section), a minimal agent config naming heat_local, and the project's own hooks — plus the agent
// started as production starts it: `os-config-agent run --root <root> --config-file /etc/os-collect-config.conf`.

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
/** The agent under test: the project's bundle, or another build named by OCA_AGENT_BUNDLE. */
export const BUNDLE = process.env.OCA_AGENT_BUNDLE ?? path.join(REPO, 'dist/os-config-agent.mjs');
const CONFIG_FILE = '/etc/os-collect-config.conf';
/** How long stop() gives the agent to leave on SIGTERM before it kills its process group. */
export const AGENT_STOP_GRACE_MS = 5000;

export interface Instance {
  readonly root: string;
  /** A directory outside the root that scripts may write markers to (hooks run on this machine, unrooted). */
  readonly markers: string;
  /** The agent's config file as the agent rewrote it (self-configuration). */
  readConfig(): string;
}

/** The poll settings of an instance's config; the scenarios poll every second unless they say otherwise. */
export interface PollSettings {
  readonly min_polling_interval: number;
  readonly polling_interval: number;
  /** Omitted: the agent's default jitter. */
  readonly poll_jitter?: number;
  readonly poll_after_signal?: boolean;
}
const FAST_POLLS: PollSettings = { min_polling_interval: 1, polling_interval: 1, poll_jitter: 0 };

function pollLines(polls: PollSettings): string {
  const agent = [
    ...(polls.poll_jitter !== undefined ? [`poll_jitter = ${polls.poll_jitter}`] : []),
    ...(polls.poll_after_signal !== undefined ? [`poll_after_signal = ${polls.poll_after_signal}`] : []),
  ];
  return (
    `min_polling_interval = ${polls.min_polling_interval}\npolling_interval = ${polls.polling_interval}\n` +
    (agent.length ? `[agent]\n${agent.join('\n')}\n` : '')
  );
}

export function prepareInstance(dir: string, osCollectConfig: unknown, polls: PollSettings = FAST_POLLS): Instance {
  const root = path.join(dir, 'root');
  const markers = path.join(dir, 'markers');
  mkdirSync(markers, { recursive: true });
  mkdirSync(path.join(root, 'etc'), { recursive: true });
  writeFileSync(
    path.join(root, CONFIG_FILE),
    // What an image ships: heat_local only; the agent learns the transport from the metadata Heat wrote. `command` is
    // set so that a build without the native pipeline can never run this machine's own os-refresh-config (the tests
    // fail fast when the agent falls back to the command; see AgentProcess.problem).
    `[DEFAULT]\ncollectors = heat_local\ncommand = /bin/true\n${pollLines(polls)}`,
    { mode: 0o600 },
  );
  const cfnInit = path.join(root, 'var/lib/heat-cfntools/cfn-init-data');
  mkdirSync(path.dirname(cfnInit), { recursive: true, mode: 0o700 });
  writeFileSync(cfnInit, JSON.stringify({ 'os-collect-config': osCollectConfig }), { mode: 0o600 });
  installBuiltinHooks(path.join(root, 'var/lib/heat-config/hooks'));
  return { root, markers, readConfig: () => readFileSync(path.join(root, CONFIG_FILE), 'utf8') };
}

export interface AgentProcess {
  readonly child: ChildProcess;
  /** Parsed JSON log lines (stdout); anything else is kept as {msg: 'unparseable', line}. */
  readonly lines: Array<Record<string, unknown>>;
  readonly exit: Promise<number | string>;
  /** Why this agent cannot make progress (it exited, or it ran the command pipeline instead of the native one). */
  problem(): string | undefined;
  /** Highest resident set size the kernel recorded for the agent process (VmHWM), in KiB. */
  peakRssKib(): number | undefined;
  /** SIGKILL the agent process only (its hooks keep running, as after a crash). */
  crash(): Promise<void>;
  /** SIGTERM, then SIGKILL of the whole process group after `graceMs`. */
  stop(graceMs?: number): Promise<number | string>;
}

export function startAgent(instance: Instance, logFile: string): AgentProcess {
  if (!existsSync(BUNDLE)) throw new Error(`${BUNDLE} is missing: run "node scripts/build.mjs" first`);
  const workDir = path.join(instance.root, 'var/lib/heat-config/heat-config-script');
  const outputsDir = path.join(instance.root, 'var/run/heat-config/heat-config-script');
  const child = spawn(
    process.execPath,
    [BUNDLE, 'run', '--root', instance.root, '--config-file', CONFIG_FILE, '--log-level', 'debug'],
    {
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      // The script hook's working and output directories follow its environment; keep them inside the root too.
      env: { ...process.env, HEAT_SCRIPT_WORKING: workDir, HEAT_SCRIPT_OUTPUTS: outputsDir },
    },
  );
  const log = createWriteStream(logFile, { flags: 'a' });
  const lines: Array<Record<string, unknown>> = [];
  let buf = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    log.write(chunk);
    buf += chunk.toString();
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (!line.trim()) continue;
      try {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        lines.push({ msg: 'unparseable', line });
      }
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    log.write(chunk);
    lines.push({ msg: 'stderr', line: chunk.toString() });
  });
  const exit = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')),
  );
  void exit.then(() => log.end());
  const forget = guardGroup(child);
  let stopping = false;
  return {
    child,
    lines,
    exit,
    problem() {
      if (!stopping && (child.exitCode !== null || child.signalCode !== null))
        return `the agent exited (${child.exitCode ?? child.signalCode}); see ${logFile}`;
      if (lines.some((l) => l.msg === 'running pipeline' && l.pipeline === 'command')) {
        return `the agent ran the command pipeline, not the native one (deployments are not handled by this build); see ${logFile}`;
      }
      return undefined;
    },
    peakRssKib() {
      try {
        const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
        const m = /^VmHWM:\s+(\d+) kB/m.exec(status);
        return m ? Number(m[1]) : undefined;
      } catch {
        return undefined;
      }
    },
    async crash() {
      stopping = true;
      child.kill('SIGKILL');
      await exit;
    },
    async stop(graceMs = AGENT_STOP_GRACE_MS) {
      stopping = true;
      const result = await stopGroup(child, exit, () => child.kill('SIGTERM'), graceMs);
      forget();
      return result;
    },
  };
}
