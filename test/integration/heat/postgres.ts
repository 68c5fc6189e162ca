import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { freePort, runStep, startService, waitUntil, type Service } from './processes.js';

// A private PostgreSQL cluster for Keystone and Heat (SQLite cannot serve Keystone's concurrent requests): initdb
// with trust auth in the harness's directory, listening on 127.0.0.1 at a free port, its socket in that directory.
// initdb refuses to run as root, so under root the cluster belongs to the `postgres` account the package creates.

export interface Postgres {
  readonly port: number;
  /** SQLAlchemy URL of `database` on this cluster. */
  url(database: string): string;
  createDatabases(names: readonly string[]): Promise<void>;
  readonly service: Service;
}

function pgBinDir(): string {
  const base = '/usr/lib/postgresql';
  const versions = existsSync(base)
    ? readdirSync(base).filter((v) => existsSync(path.join(base, v, 'bin/initdb')))
    : [];
  versions.sort((a, b) => Number(b) - Number(a));
  if (!versions[0])
    throw new Error(
      'PostgreSQL server binaries not found under /usr/lib/postgresql; run test/integration/heat/install.sh',
    );
  return path.join(base, versions[0], 'bin');
}

function owner(): { uid?: number; gid?: number } {
  if (process.getuid?.() !== 0) return {};
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
  return { uid, gid };
}

export async function startPostgres(dir: string): Promise<Postgres> {
  const bin = pgBinDir();
  const data = path.join(dir, 'pgdata');
  const sockets = path.join(dir, 'pgsock');
  mkdirSync(data, { mode: 0o700 });
  mkdirSync(sockets, { mode: 0o700 });
  const ids = owner();
  if (ids.uid !== undefined && ids.gid !== undefined) {
    chownSync(data, ids.uid, ids.gid);
    chownSync(sockets, ids.uid, ids.gid);
  }
  const port = await freePort();
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8' };
  await runStep({
    name: 'initdb',
    command: path.join(bin, 'initdb'),
    args: ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-sync'],
    logFile: path.join(dir, 'initdb.log'),
    env,
    cwd: dir,
    ...ids,
    timeoutMs: 60_000,
  });
  const service = startService({
    name: 'postgres',
    command: path.join(bin, 'postgres'),
    args: [
      '-D',
      data,
      '-p',
      String(port),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      `unix_socket_directories=${sockets}`,
      '-c',
      'fsync=off',
      '-c',
      'max_connections=200',
    ],
    logFile: path.join(dir, 'postgres.log'),
    env,
    cwd: dir,
    ...ids,
  });
  const psql = (sql: string, logName: string) =>
    runStep({
      name: 'psql',
      command: path.join(bin, 'psql'),
      args: [
        '-h',
        '127.0.0.1',
        '-p',
        String(port),
        '-U',
        'postgres',
        '-d',
        'postgres',
        '-v',
        'ON_ERROR_STOP=1',
        '-c',
        sql,
      ],
      logFile: path.join(dir, logName),
      env,
      cwd: dir,
      timeoutMs: 30_000,
    });
  await waitUntil(
    'PostgreSQL to accept connections',
    async () => {
      await psql('SELECT 1', 'psql-probe.log');
      return true;
    },
    60_000,
    service,
  );
  return {
    port,
    service,
    url: (database) => `postgresql+psycopg2://postgres@127.0.0.1:${port}/${database}`,
    async createDatabases(names) {
      for (const name of names) await psql(`CREATE DATABASE ${name}`, 'psql.log');
    },
  };
}
