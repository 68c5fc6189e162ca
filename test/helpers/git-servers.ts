import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect, createServer, type AddressInfo } from 'node:net';
import path from 'node:path';
import type { TapTest } from './http-test-server.js';

// Real git servers on loopback for the chef hook's sources: `git daemon`, a real sshd (Debian's openssh-server) with
// its own host key on a port of its own, and git's own smart HTTP backend behind a node:http server that asks for a
// token with Basic authentication, as GitHub and GitLab do. Each is stopped when the test ends.

export const SSHD = '/usr/sbin/sshd';
const GIT_ENV = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };

/** Runs git for the test's own repositories (never the code under test). */
export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.invalid', ...args], {
    cwd,
    env: GIT_ENV,
    encoding: 'utf8',
  });
}

export interface Repos {
  /** The directory the servers export. */
  readonly base: string;
  /** A kitchen (cookbooks/, roles/) with branch main (default), branch feature, tag v1 and the first commit. */
  readonly kitchen: string;
  readonly firstCommit: string;
  /** One cookbook (metadata.rb names it "webapp"). */
  readonly cookbook: string;
}

/** Bare repositories under <dir>/repos: kitchen.git and webapp-cookbook.git. */
export function makeRepos(dir: string): Repos {
  const base = path.join(dir, 'repos');
  const work = path.join(dir, 'work');
  mkdirSync(base, { recursive: true });
  const write = (root: string, files: Record<string, string>) => {
    for (const [name, content] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
      writeFileSync(path.join(root, name), content);
    }
  };
  const publish = (name: string) => {
    git(base, 'clone', '-q', '--bare', path.join(work, name), `${name}.git`);
    return path.join(base, `${name}.git`);
  };

  const kitchen = path.join(work, 'kitchen');
  mkdirSync(kitchen, { recursive: true });
  git(kitchen, 'init', '-q', '-b', 'main');
  write(kitchen, { 'cookbooks/app/recipes/default.rb': 'log "first"\n', 'roles/web.json': '{}\n' });
  git(kitchen, 'add', '.');
  git(kitchen, 'commit', '-qm', 'first');
  const firstCommit = git(kitchen, 'rev-parse', 'HEAD').trim();
  write(kitchen, { 'cookbooks/app/recipes/default.rb': 'log "tagged"\n' });
  git(kitchen, 'commit', '-qam', 'tagged');
  git(kitchen, 'tag', '-a', '-m', 'release 1', 'v1');
  git(kitchen, 'checkout', '-q', '-b', 'feature');
  write(kitchen, { 'cookbooks/app/recipes/default.rb': 'log "feature"\n' });
  git(kitchen, 'commit', '-qam', 'feature');
  git(kitchen, 'checkout', '-q', 'main');
  write(kitchen, { 'cookbooks/app/recipes/default.rb': 'log "main"\n' });
  git(kitchen, 'commit', '-qam', 'main');

  const cookbook = path.join(work, 'webapp-cookbook');
  mkdirSync(cookbook, { recursive: true });
  git(cookbook, 'init', '-q', '-b', 'main');
  write(cookbook, { 'metadata.rb': "name 'webapp'\nversion '1.0.0'\n", 'recipes/default.rb': 'log "webapp"\n' });
  git(cookbook, 'add', '.');
  git(cookbook, 'commit', '-qm', 'cookbook');
  return { base, kitchen: publish('kitchen'), firstCommit, cookbook: publish('webapp-cookbook') };
}

/** A free TCP port on 127.0.0.1 (for servers that cannot listen on port 0 and say which port they got). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Resolves once something accepts connections on the port; bounded. */
async function waitForPort(port: number, child: ChildProcess, what: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (child.exitCode !== null) throw new Error(`${what} exited with status ${child.exitCode}`);
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${what} did not listen on 127.0.0.1:${port}`);
}

function stopWith(t: TapTest, child: ChildProcess): void {
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  );
}

/** `git daemon` exporting `base` on loopback; git://127.0.0.1:<port>/<name>.git. */
export async function startGitDaemon(t: TapTest, base: string): Promise<{ url: (name: string) => string }> {
  const port = await freePort();
  const child = spawn(
    'git',
    ['daemon', '--reuseaddr', '--export-all', `--base-path=${base}`, '--listen=127.0.0.1', `--port=${port}`, base],
    { env: GIT_ENV, stdio: 'ignore' },
  );
  stopWith(t, child);
  await waitForPort(port, child, 'git daemon');
  return { url: (name) => `git://127.0.0.1:${port}/${name}` };
}

export interface Sshd {
  readonly port: number;
  /** The private key sshd lets in. */
  readonly clientKey: string;
  /** known_hosts lines for this server's host key. */
  readonly knownHosts: string;
  url(repo: string): string;
}

/** A real sshd on a loopback port with its own host key, letting one fresh key in as the current user. */
export async function startSshd(t: TapTest, dir: string): Promise<Sshd> {
  const keys = path.join(dir, 'sshd');
  mkdirSync(keys, { recursive: true, mode: 0o700 });
  const keygen = (file: string) => execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', '', '-f', file]);
  keygen(path.join(keys, 'host'));
  keygen(path.join(keys, 'client'));
  const read = (f: string) => execFileSync('cat', [path.join(keys, f)], { encoding: 'utf8' });
  writeFileSync(path.join(keys, 'authorized_keys'), read('client.pub'), { mode: 0o600 });
  const port = await freePort();
  const config = path.join(keys, 'sshd_config');
  writeFileSync(
    config,
    [
      `Port ${port}`,
      'ListenAddress 127.0.0.1',
      `HostKey ${path.join(keys, 'host')}`,
      `AuthorizedKeysFile ${path.join(keys, 'authorized_keys')}`,
      `PidFile ${path.join(keys, 'sshd.pid')}`,
      'PermitRootLogin prohibit-password',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'UsePAM no',
      'StrictModes no',
      'LogLevel ERROR',
      '',
    ].join('\n'),
  );
  // Debian's unit makes sshd's privilege separation directory; without the unit the test does.
  if (!existsSync('/run/sshd')) mkdirSync('/run/sshd', { mode: 0o755 });
  const child = spawn(SSHD, ['-D', '-e', '-f', config], { stdio: 'ignore' });
  stopWith(t, child);
  await waitForPort(port, child, 'sshd');
  const hostKey = read('host.pub').trim().split(' ').slice(0, 2).join(' ');
  const user = execFileSync('id', ['-un'], { encoding: 'utf8' }).trim();
  return {
    port,
    clientKey: read('client'),
    knownHosts: `[127.0.0.1]:${port} ${hostKey}\n`,
    url: (repo) => `ssh://${user}@127.0.0.1:${port}${repo}`,
  };
}

export interface TokenGitServer {
  /** http://127.0.0.1:<port>/<name>.git */
  url(name: string): string;
  /** Authorization headers the server was sent, in order. */
  readonly authorizations: string[];
}

/**
 * git's smart HTTP (git http-backend as CGI) on loopback, answering 401 with a Basic challenge unless the request
 * carries `user` and `token`.
 */
export async function startTokenGitServer(
  t: TapTest,
  base: string,
  user: string,
  token: string,
): Promise<TokenGitServer> {
  const authorizations: string[] = [];
  const expected = `Basic ${Buffer.from(`${user}:${token}`).toString('base64')}`;
  const server = createHttpServer((req: IncomingMessage, res: ServerResponse) => {
    authorizations.push(req.headers.authorization ?? '');
    if (req.headers.authorization !== expected) {
      res.writeHead(401, { 'www-authenticate': 'Basic realm="git"' }).end('authentication required\n');
      return;
    }
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const cgi = spawn('git', ['http-backend'], {
      env: {
        ...GIT_ENV,
        GIT_PROJECT_ROOT: base,
        GIT_HTTP_EXPORT_ALL: '1',
        PATH_INFO: decodeURIComponent(url.pathname),
        QUERY_STRING: url.search.slice(1),
        REQUEST_METHOD: req.method ?? 'GET',
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        HTTP_CONTENT_ENCODING: String(req.headers['content-encoding'] ?? ''),
        GIT_PROTOCOL: String(req.headers['git-protocol'] ?? ''),
        REMOTE_USER: user,
        REMOTE_ADDR: '127.0.0.1',
      },
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    req.pipe(cgi.stdin);
    const chunks: Buffer[] = [];
    cgi.stdout.on('data', (c: Buffer) => chunks.push(c));
    cgi.on('close', () => {
      const out = Buffer.concat(chunks);
      const split = out.indexOf('\r\n\r\n');
      const head = out.subarray(0, split).toString('latin1');
      const headers: Record<string, string> = {};
      let status = 200;
      for (const line of head.split('\r\n')) {
        const [name = '', ...rest] = line.split(':');
        const value = rest.join(':').trim();
        if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10);
        else if (name) headers[name] = value;
      }
      res.writeHead(status, headers).end(out.subarray(split + 4));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as AddressInfo;
  return { url: (name) => `http://127.0.0.1:${port}/${name}`, authorizations };
}
