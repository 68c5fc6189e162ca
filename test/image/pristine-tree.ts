import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Container } from './container.js';

// What test/image/package-boot.itest.ts and pristine-boot.itest.ts share: the work directory, the stock bookworm tree
// (test/image/debootstrap-tree.sh, a fresh copy for each boot), the Debian package under test, and small helpers for
// reading a booted system. Both run through test/image/pristine-boot.sh, which makes the tree and the package.

export const HERE = path.dirname(fileURLToPath(import.meta.url));
export const REPO = path.resolve(HERE, '../..');
export const WORK = process.env.OCA_PRISTINE_WORK ?? '/var/tmp/oca-pristine';
export const VERSION = (JSON.parse(readFileSync(path.join(REPO, 'package.json'), 'utf8')) as { version: string })
  .version;

const run = promisify(execFile);

/** Why these tests cannot run here, or undefined. They need root, nspawn and a made tree and package. */
export function missingForBoot(): string | undefined {
  if (process.getuid?.() !== 0) return 'run as root (systemd-nspawn, nsenter)';
  for (const tool of ['/usr/bin/systemd-nspawn', '/usr/bin/nsenter']) {
    if (!existsSync(tool)) return `${tool} is missing: apt-get install -y systemd-container util-linux`;
  }
  if (!debPackage()) return `no os-config-agent_*.deb in ${path.join(WORK, 'deb')}: run test/image/pristine-boot.sh`;
  return undefined;
}

/** The package under test: OCA_PRISTINE_DEB, or the one pristine-boot.sh built into WORK/deb. */
export function debPackage(): string | undefined {
  if (process.env.OCA_PRISTINE_DEB) return process.env.OCA_PRISTINE_DEB;
  const dir = path.join(WORK, 'deb');
  const found = existsSync(dir)
    ? readdirSync(dir).filter((f) => f.startsWith(`os-config-agent_${VERSION}-`) && f.endsWith('.deb'))
    : [];
  return found.length === 1 ? path.join(dir, found[0] as string) : undefined;
}

/** A fresh copy of the cached debootstrapped tree at `dest`; seconds it took. */
export async function freshTree(dest: string): Promise<number> {
  const started = Date.now();
  await run('bash', [path.join(HERE, 'debootstrap-tree.sh'), '--unpack', WORK, dest], { timeout: 300_000 });
  for (const gone of [
    'opt/os-config-agent',
    'usr/lib/os-config-agent',
    'usr/bin/os-collect-config',
    'lib/systemd/system/os-config-agent.service',
  ]) {
    if (existsSync(path.join(dest, gone)))
      throw new Error(`the stock tree already holds ${gone}: it must have nothing of the agent`);
  }
  return (Date.now() - started) / 1000;
}

/** Runs a command inside and gives its stdout even when it exits non-zero (systemctl is-active and friends). */
export async function say(c: Container, argv: readonly string[], timeoutMs?: number): Promise<string> {
  return (await c.exec(argv, timeoutMs).catch((e: { stdout?: string }) => e.stdout ?? '')).trim();
}

/** dpkg's status of a package inside (`ii`, `rc`), or `absent`. */
export async function dpkgStatus(c: Container, pkg: string): Promise<string> {
  return (await say(c, ['dpkg-query', '-W', '-f', '${db:Status-Abbrev}', pkg])) || 'absent';
}

export async function exists(c: Container, file: string): Promise<boolean> {
  return (await say(c, ['sh', '-c', `test -e '${file}' && echo yes || echo no`])) === 'yes';
}

export { agentLines, type JournalLine } from './container.js';
