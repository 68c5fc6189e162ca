import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import type { HeatClient, Stack } from '../integration/heat/heat-client.js';
import { startService, waitUntil, type Service } from '../integration/heat/processes.js';

// A booted image: `systemd-nspawn -b` with systemd as PID 1 on a directory tree, sharing the host's network (so the
// system inside reaches services on 127.0.0.1; nspawn keeps CAP_NET_ADMIN from it, so it cannot reconfigure the
// host's interfaces), not registered with machined (this machine runs no systemd). Commands run inside it through
// nsenter into the container's namespaces, as `machinectl shell` would. stop() powers it off as SIGTERM to nspawn
// does (a clean shutdown), then kills what is left.
//
// A reboot asked inside (`systemctl reboot`) shuts the system down and ends nspawn with NSPAWN_REBOOT_STATUS; booting
// the same tree again is then the caller's job, as it is systemd-nspawn@.service's (RestartForceExitStatus=133).
// nspawn mounts a new random /proc/sys/kernel/random/boot_id for each boot, so the system inside sees a new boot id.

const run = promisify(execFile);
/** systemd-nspawn's exit status when the system inside rebooted (a poweroff is 0). */
export const NSPAWN_REBOOT_STATUS = 133;
const INSIDE_ENV = {
  PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
  LANG: 'C.UTF-8',
  SYSTEMD_PAGER: '',
};

export interface BootOptions {
  readonly tree: string;
  readonly consoleLog: string;
  /** host path -> container path, read-only. */
  readonly bindRo?: Readonly<Record<string, string>>;
  readonly hostname?: string;
}

export interface Container {
  readonly service: Service;
  /** Date.now() when nspawn was started. */
  readonly startedAt: number;
  /** PID (in this machine's namespace) of the container's systemd. */
  leader(): number;
  /** Runs a command inside; resolves with stdout, rejects on failure or after `timeoutMs`. */
  exec(argv: readonly string[], timeoutMs?: number): Promise<string>;
  /** Waits until systemd inside reports the boot finished (running or degraded). */
  booted(timeoutMs: number): Promise<string>;
  /** Clean poweroff (SIGTERM to nspawn), SIGKILL of the group after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

export function bootContainer(opts: BootOptions): Container {
  // CAP_SYS_RESOURCE, which nspawn drops by default, as a VM's systemd has it: without it the unit's negative
  // OOMScoreAdjust= cannot be applied (lowering an oom_score_adj needs it).
  const args = [
    '-q',
    '--register=no',
    '--keep-unit',
    '--volatile=no',
    '--capability=CAP_SYS_RESOURCE',
    '-D',
    opts.tree,
  ];
  if (opts.hostname) args.push(`--hostname=${opts.hostname}`);
  for (const [from, to] of Object.entries(opts.bindRo ?? {})) args.push(`--bind-ro=${from}:${to}`);
  args.push('-b');
  const startedAt = Date.now();
  const service = startService({
    name: 'systemd-nspawn',
    command: 'systemd-nspawn',
    args,
    logFile: opts.consoleLog,
    env: { PATH: INSIDE_ENV.PATH, LANG: 'C.UTF-8' },
  });
  let leaderPid: number | undefined;
  let leaderStart: string | undefined;
  const leader = (): number => {
    if (leaderPid !== undefined) return leaderPid;
    const parent = service.child.pid;
    if (parent === undefined) throw new Error('systemd-nspawn did not start');
    for (const name of readdirSync('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      let stat: string;
      try {
        stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      } catch {
        continue;
      }
      // Fields after the parenthesised command name: state, ppid, ...
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      // nspawn's first child exits once it has forked the container's init; only init is PID 1 in its namespace.
      if (ppid === parent && isNamespaceInit(Number(name))) {
        leaderPid = Number(name);
        leaderStart = startTime(stat);
        return leaderPid;
      }
    }
    throw new Error('the container has no init process yet');
  };
  const exec = async (argv: readonly string[], timeoutMs = 30_000): Promise<string> => {
    // `env -i` inside: tap's process tracking adds NODE_OPTIONS to every child's environment, which must not reach
    // the Node.js programs of the image.
    const clean = Object.entries(INSIDE_ENV).map(([k, v]) => `${k}=${v}`);
    const { stdout } = await run(
      'nsenter',
      [
        '--target',
        String(leader()),
        '--mount',
        '--uts',
        '--ipc',
        '--pid',
        '--',
        '/usr/bin/env',
        '-i',
        ...clean,
        ...argv,
      ],
      {
        env: INSIDE_ENV,
        timeout: timeoutMs,
        maxBuffer: 16 * 1024 * 1024,
      },
    );
    return stdout;
  };
  return {
    service,
    startedAt,
    leader,
    exec,
    async booted(timeoutMs) {
      let state = '';
      await waitUntil(
        'the container to finish booting',
        async () => {
          // is-system-running exits non-zero for "degraded" and "starting"; its output is what counts.
          state = (
            await exec(['systemctl', 'is-system-running']).catch((err: { stdout?: string }) => err.stdout ?? '')
          ).trim();
          return state === 'running' || state === 'degraded';
        },
        timeoutMs,
        service,
      );
      return state;
    },
    async stop(graceMs = 60_000) {
      let init: number | undefined;
      try {
        init = leader();
      } catch {
        // never booted
      }
      await service.stop('SIGTERM', graceMs);
      // The container's systemd is not in nspawn's process group: if nspawn was killed, end its PID namespace too.
      if (init !== undefined && startTime(readStat(init)) === leaderStart) {
        try {
          process.kill(init, 'SIGKILL');
        } catch {
          // gone with nspawn, as it should be
        }
      }
    },
  };
}

function readStat(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return '';
  }
}

/** The start time field of a /proc/<pid>/stat line: with the PID it names one process, never a later reuse. */
function startTime(stat: string): string | undefined {
  return stat ? stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] : undefined;
}

function isNamespaceInit(pid: number): boolean {
  try {
    const ns = /^NSpid:\s+(.*)$/m
      .exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]
      ?.trim()
      .split(/\s+/);
    return ns !== undefined && ns.length > 1 && ns.at(-1) === '1';
  } catch {
    return false;
  }
}

/** Waits for a stack's CREATE to end (COMPLETE or FAILED); fails at once if the container goes away first. */
export async function settleStack(client: HeatClient, stack: string, c: Container, timeoutMs: number): Promise<Stack> {
  let exited: number | string | undefined;
  void c.service.exited.then((r) => (exited = r));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (exited !== undefined)
      throw new Error(`the container exited (${exited}) before the stack completed; console: ${c.service.logFile}`);
    const s = await client.stack(stack);
    if (!s) throw new Error(`stack ${stack} disappeared`);
    if (/^CREATE_(COMPLETE|FAILED)$/.test(s.stack_status)) return s;
    if (Date.now() > deadline)
      throw new Error(`stack ${stack} still ${s.stack_status} after ${timeoutMs} ms; console: ${c.service.logFile}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** A numeric property of a unit inside the container (a monotonic timestamp, a count). */
export async function unitNumber(c: Container, unit: string, property: string): Promise<number> {
  return Number((await c.exec(['systemctl', 'show', '-p', property, '--value', unit])).trim());
}

/** The fields of the agent's journal lines the image tests read. */
export interface JournalLine {
  level?: string;
  msg?: string;
  deploymentId?: string;
  deploymentName?: string;
  failed?: boolean;
  from?: string | null;
  to?: string;
}

/** The agent's JSON lines from `journalctl -o cat`. */
export function agentLines(text: string): JournalLine[] {
  return text
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as JournalLine);
}
