import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, Socket, type AddressInfo } from 'node:net';
import path from 'node:path';

// Debian's tinyproxy on 127.0.0.1, started with its own config, log and pid file on a free port, stopped by the
// caller (teardown). Its log (LogLevel Connect) has one `Request (file descriptor N): <line>` per request it
// handled: the forward requests' absolute URLs and the CONNECT targets.

export const TINYPROXY = '/usr/bin/tinyproxy';
const SETPRIV = '/usr/bin/setpriv';

export function tinyproxyMissing(): string | false {
  return existsSync(TINYPROXY) ? false : 'tinyproxy is not installed (apt-get install tinyproxy; .ci/run installs it)';
}

export interface Tinyproxy {
  readonly port: number;
  /** http://127.0.0.1:port, or with user:password@ when started with basicAuth. */
  readonly url: string;
  /** The request lines tinyproxy logged so far (`GET http://… HTTP/1.1`, `CONNECT host:port HTTP/1.1`). */
  requests(): string[];
  /** The whole log. */
  log(): string;
  stop(): Promise<void>;
}

export interface TinyproxyOptions {
  readonly basicAuth?: { readonly user: string; readonly password: string };
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

/** Start tinyproxy in `dir` (a test directory); resolves once it accepts connections. */
export async function startTinyproxy(dir: string, options: TinyproxyOptions = {}): Promise<Tinyproxy> {
  const logFile = path.join(dir, 'tinyproxy.log');
  const readLog = () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : '');
  // A port picked here may be taken by the time tinyproxy binds it: a few tries, each checked.
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort();
    const conf = path.join(dir, 'tinyproxy.conf');
    writeFileSync(
      conf,
      [
        `Port ${port}`,
        'Listen 127.0.0.1',
        'Timeout 15',
        `LogFile "${logFile}"`,
        'LogLevel Connect',
        `PidFile "${path.join(dir, 'tinyproxy.pid')}"`,
        'MaxClients 50',
        'Allow 127.0.0.1',
        // No ConnectPort line: CONNECT is allowed to any port (the test TLS server's port is random).
        ...(options.basicAuth ? [`BasicAuth ${options.basicAuth.user} ${options.basicAuth.password}`] : []),
        '',
      ].join('\n'),
    );
    // Killed with the test process even when that dies without its teardown (a tap timeout): setpriv's parent-death
    // signal. tinyproxy keeps the current user (no User line: it warns and goes on), since a change of user would
    // clear that signal.
    const argv = [TINYPROXY, '-d', '-c', conf];
    const child = existsSync(SETPRIV)
      ? spawn(SETPRIV, ['--pdeathsig', 'KILL', '--', ...argv], { stdio: ['ignore', 'ignore', 'pipe'] })
      : spawn(argv[0] as string, argv.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
    if (await listening(port, child)) {
      const auth = options.basicAuth ? `${options.basicAuth.user}:${options.basicAuth.password}@` : '';
      return {
        port,
        url: `http://${auth}127.0.0.1:${port}`,
        requests: () =>
          readLog()
            .split('\n')
            .flatMap((l) => /Request \(file descriptor \d+\): (.*)$/.exec(l)?.[1] ?? []),
        log: readLog,
        stop: () => stop(child),
      };
    }
    await stop(child);
    if (attempt === 4) throw new Error(`tinyproxy did not start: ${stderr.trim()}`);
  }
  throw new Error('unreachable');
}

/** Polls for the port (bounded: 100 tries, 50 ms apart); false when tinyproxy exited or never listened. */
async function listening(port: number, child: ChildProcess): Promise<boolean> {
  for (let i = 0; i < 100; i++) {
    if (child.exitCode !== null) return false;
    const ok = await new Promise<boolean>((resolve) => {
      const socket = new Socket();
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
      socket.connect(port, '127.0.0.1');
    });
    if (ok) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
  await exited;
  clearTimeout(timer);
}
