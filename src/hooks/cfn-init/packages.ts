import { HookFailure } from '../contract.js';
import { findExecutable } from '../../util/executable.js';
import { PACKAGE_MANAGERS, type PackageEntry, type PackageSet } from './model.js';
import { mustRun, tool, type InitRun } from './run-state.js';

// packages: the managers heat-cfntools knows, in its order (rpm, apt, yum, dnf, then the others by name). A package
// already installed (at the version asked for, when one is) is not installed again and does not count as changed.
// An install that fails stops the run (heat-cfntools logged a warning and went on).

const ORDER = ['dpkg', 'rpm', 'apt', 'yum', 'dnf'];

export function packageOrder(sets: readonly PackageSet[]): PackageSet[] {
  const rank = (m: string) => (ORDER.includes(m) ? ORDER.indexOf(m) : ORDER.length);
  return [...sets].sort(
    (a, b) => rank(a.manager) - rank(b.manager) || a.manager.toLowerCase().localeCompare(b.manager.toLowerCase()),
  );
}

export async function applyPackages(run: InitRun, config: string, sets: readonly PackageSet[]): Promise<void> {
  for (const set of packageOrder(sets)) {
    if (set.packages.length === 0) continue;
    const resource = `config "${config}" packages.${set.manager}`;
    let installed: readonly string[];
    switch (set.manager) {
      case 'apt':
        installed = await apt(run, resource, set.packages);
        break;
      case 'yum':
      case 'dnf':
      case 'zypper':
        installed = await rpmFamily(run, resource, set.manager, set.packages);
        break;
      case 'rpm':
        installed = await rpmUrls(run, resource, set.packages);
        break;
      case 'python':
        installed = await python(run, resource, set.packages);
        break;
      case 'rubygems':
        installed = await gems(run, resource, set.packages);
        break;
      default:
        throw new HookFailure(
          `cfn-init: ${resource}: unknown package manager "${set.manager}" (known: ${PACKAGE_MANAGERS.join(', ')})`,
        );
    }
    for (const name of installed) run.changed.add(`package:${set.manager}:${name}`);
    if (installed.length > 0)
      run.ctx.log.info('packages installed', { manager: set.manager, packages: installed.join(' ') });
  }
}

async function apt(run: InitRun, resource: string, packages: readonly PackageEntry[]): Promise<string[]> {
  const names = packages.map((p) => p.name);
  // dpkg-query answers for every package it knows and exits 1 when one is unknown: the lines are what count.
  const query = await tool(run, {
    file: 'dpkg-query',
    args: ['-W', '-f', '${Package}\t${Version}\t${db:Status-Abbrev}\n', '--', ...names],
  });
  const have = new Map<string, string>();
  for (const line of query.stdout.split('\n')) {
    const [name, version, status] = line.split('\t');
    if (name && version !== undefined && status?.startsWith('ii')) have.set(name, version);
  }
  const missing = packages.filter(
    (p) => !have.has(p.name) || (p.versions[0] !== undefined && have.get(p.name) !== p.versions[0]),
  );
  if (missing.length === 0) return [];
  const args = [
    '-y',
    'install',
    ...missing.map((p) => (p.versions[0] !== undefined ? `${p.name}=${p.versions[0]}` : p.name)),
  ];
  await mustRun(
    run,
    resource,
    { file: 'apt-get', args, env: { ...run.ctx.env, DEBIAN_FRONTEND: 'noninteractive' } },
    'apt-get was not found: this is not a Debian-family system; use another package manager key',
  );
  return missing.map((p) => p.name);
}

async function rpmFamily(
  run: InitRun,
  resource: string,
  manager: 'yum' | 'dnf' | 'zypper',
  packages: readonly PackageEntry[],
): Promise<string[]> {
  const wanted: string[] = [];
  for (const p of packages) {
    const version = newest(p.versions);
    const spec = version ? `${p.name}-${version}` : p.name;
    if ((await tool(run, { file: 'rpm', args: ['-q', spec] })).status !== 0) wanted.push(spec);
  }
  if (wanted.length === 0) return [];
  // heat-cfntools: yum falls back to dnf where there is no yum.
  const tool_ = manager === 'yum' && !(await findExecutable('yum', run.ctx.env)) ? 'dnf' : manager;
  const args =
    tool_ === 'zypper'
      ? ['-n', 'install', ...wanted]
      : tool_ === 'dnf'
        ? ['-y', '--best', 'install', ...wanted]
        : ['-y', 'install', ...wanted];
  await mustRun(run, resource, { file: tool_, args }, `${tool_} was not found: use the package manager of this system`);
  return packages.map((p) => p.name);
}

/** rpm: each package names the URL of its .rpm file. */
async function rpmUrls(run: InitRun, resource: string, packages: readonly PackageEntry[]): Promise<string[]> {
  const done: string[] = [];
  for (const p of packages) {
    if ((await tool(run, { file: 'rpm', args: ['-q', p.name] })).status === 0) continue;
    const url = p.versions[0];
    if (!url) throw new HookFailure(`cfn-init: ${resource}.${p.name}: give the URL of the .rpm file`);
    await mustRun(
      run,
      `${resource}.${p.name}`,
      { file: 'rpm', args: ['-U', '--force', '--nosignature', url] },
      'rpm was not found: this is not an RPM system',
    );
    done.push(p.name);
  }
  return done;
}

async function python(run: InitRun, resource: string, packages: readonly PackageEntry[]): Promise<string[]> {
  const pip = (await findExecutable('pip3', run.ctx.env)) ?? (await findExecutable('pip', run.ctx.env));
  for (const p of packages) {
    const version = p.versions[0];
    const spec = pip
      ? { file: pip, args: ['install', version ? `${p.name}==${version}` : p.name] }
      : { file: 'easy_install', args: [p.name] };
    await mustRun(
      run,
      `${resource}.${p.name}`,
      spec,
      'neither pip3, pip nor easy_install was found: install python3-pip',
    );
  }
  return packages.map((p) => p.name);
}

async function gems(run: InitRun, resource: string, packages: readonly PackageEntry[]): Promise<string[]> {
  for (const p of packages) {
    const version = p.versions[0];
    await mustRun(
      run,
      `${resource}.${p.name}`,
      { file: 'gem', args: ['install', ...(version ? ['--version', version] : []), p.name] },
      'gem was not found: install rubygems (ruby)',
    );
  }
  return packages.map((p) => p.name);
}

/** The highest of the versions asked for (a plain dotted comparison: rpm picks among what it can find anyway). */
function newest(versions: readonly string[]): string | undefined {
  return [...versions].sort((a, b) => b.localeCompare(a, 'en', { numeric: true }))[0];
}
