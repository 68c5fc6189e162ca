import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
import path from 'node:path';

// A private Debian dockerd for one test file: its own data-root, exec-root, socket and pid file in a fresh /tmp
// directory, no bridge, no iptables rules and no masquerading (so two run at once and nothing touches the host's
// network; containers use --net=none or network_mode: none). The hooks reach it through DOCKER_HOST. It holds one
// image, made with `docker import` from busybox-static (no registry). stop() removes the containers, ends the daemon
// (SIGKILL when it does not stop in time), unmounts what it left and removes the directory, also after a failure.

export const DOCKERD = '/usr/sbin/dockerd';
/** Debian's docker CLI (the one CI has), not whatever else is on PATH. */
export const DOCKER = '/usr/bin/docker';
const BUSYBOX = '/bin/busybox';
const SETPRIV = '/usr/bin/setpriv';
export const IMAGE = 'bb:test';
const APPLETS = ['sh', 'echo', 'sleep', 'cat', 'env', 'printenv', 'ls', 'true', 'false', 'hostname', 'id'];
const READY_ATTEMPTS = 240;
const READY_PAUSE_MS = 250;
const STOP_WAIT_MS = 20_000;

/** Why the private daemon cannot run here, or false. */
export function dockerdMissing(): string | false {
  if (process.getuid?.() !== 0) return 'needs root (a private dockerd)';
  for (const [file, pkg] of [
    [DOCKERD, 'docker.io'],
    [DOCKER, 'docker.io'],
    [BUSYBOX, 'busybox-static'],
  ] as const) {
    if (!existsSync(file)) return `${file} is missing (apt-get install ${pkg}; .ci/run installs it)`;
  }
  return false;
}

export interface DockerResult {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface Dockerd {
  /** unix://<dir>/docker.sock */
  readonly host: string;
  readonly dir: string;
  /** Runs Debian's docker CLI against this daemon. */
  docker(...args: string[]): DockerResult;
  stop(): Promise<void>;
}

export async function startDockerd(): Promise<Dockerd> {
  const dir = mkdtempSync('/tmp/oca-dockerd-');
  const host = `unix://${path.join(dir, 'docker.sock')}`;
  const docker = (...args: string[]): DockerResult => {
    const res = spawnSync(DOCKER, args, {
      env: { PATH: '/usr/bin:/bin:/usr/sbin:/sbin', DOCKER_HOST: host, HOME: dir },
      encoding: 'utf8',
      timeout: 120_000,
    });
    return { status: res.status, stdout: res.stdout ?? '', stderr: res.stderr ?? '' };
  };
  const argv = [
    DOCKERD,
    '--data-root',
    path.join(dir, 'data'),
    '--exec-root',
    path.join(dir, 'exec'),
    '--host',
    host,
    '--pidfile',
    path.join(dir, 'docker.pid'),
    '--bridge=none',
    '--iptables=false',
    '--ip-masq=false',
    '--storage-driver=overlay2',
    '--log-level=error',
  ];
  // Killed with the test process even when that dies without its teardown: setpriv's parent-death signal.
  const child = existsSync(SETPRIV)
    ? spawn(SETPRIV, ['--pdeathsig', 'KILL', '--', ...argv], { stdio: ['ignore', 'ignore', 'pipe'] })
    : spawn(DOCKERD, argv.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-8192)));
  const daemon: Dockerd = { host, dir, docker, stop: () => stop(child, dir, docker) };
  try {
    await ready(child, docker, () => stderr);
    importImage(dir, docker);
  } catch (err) {
    await daemon.stop();
    throw err;
  }
  return daemon;
}

async function ready(child: ChildProcess, docker: Dockerd['docker'], stderr: () => string): Promise<void> {
  for (let i = 0; i < READY_ATTEMPTS; i++) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`dockerd exited at start: ${stderr().trim()}`);
    if (docker('version', '--format', '{{.Server.Version}}').status === 0) return;
    await new Promise((resolve) => setTimeout(resolve, READY_PAUSE_MS));
  }
  throw new Error(`dockerd did not answer within ${(READY_ATTEMPTS * READY_PAUSE_MS) / 1000} s: ${stderr().trim()}`);
}

/** bb:test: busybox-static and its applets as the whole root filesystem. */
function importImage(dir: string, docker: Dockerd['docker']): void {
  const rootfs = path.join(dir, 'rootfs');
  mkdirSync(path.join(rootfs, 'bin'), { recursive: true });
  for (const d of ['etc', 'tmp', 'proc', 'sys', 'dev']) mkdirSync(path.join(rootfs, d));
  copyFileSync(BUSYBOX, path.join(rootfs, 'bin/busybox'));
  chmodSync(path.join(rootfs, 'bin/busybox'), 0o755);
  for (const applet of APPLETS) symlinkSync('busybox', path.join(rootfs, 'bin', applet));
  const tar = path.join(dir, 'rootfs.tar');
  const made = spawnSync('tar', ['-C', rootfs, '-cf', tar, '.'], { encoding: 'utf8' });
  if (made.status !== 0) throw new Error(`tar of the image failed: ${made.stderr}`);
  const imported = docker('import', '--change', 'ENV PATH=/bin', tar, IMAGE);
  if (imported.status !== 0) throw new Error(`docker import failed: ${imported.stderr}`);
}

async function stop(child: ChildProcess, dir: string, docker: Dockerd['docker']): Promise<void> {
  try {
    if (child.exitCode === null && child.signalCode === null) {
      const ids = docker('ps', '-aq')
        .stdout.split(/\s+/)
        .filter((id) => id !== '');
      if (ids.length > 0) docker('rm', '-f', ...ids);
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), STOP_WAIT_MS)));
      if (await Promise.race([exited.then(() => false), late])) {
        child.kill('SIGKILL');
        await exited;
      }
      clearTimeout(timer);
    }
  } finally {
    unmountUnder(dir);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Mounts the daemon left under `dir` (after a SIGKILL), deepest first. */
function unmountUnder(dir: string): void {
  const mounts = readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[1] ?? '')
    .filter((m) => m.startsWith(`${dir}/`));
  for (const m of mounts.sort((a, b) => b.length - a.length)) spawnSync('umount', ['-l', m]);
}
