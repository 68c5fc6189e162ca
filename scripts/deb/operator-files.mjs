import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';

// What the package gives an operator beside the programs: a manual page per command and the bash completion (both
// written by the build from the command definitions, dist/man and dist/completion), and the documentation the
// --help texts and manual pages point to, in /usr/share/doc/os-config-agent. Compressed as Debian compresses them
// (gzip -9n: no name, no time, so the same input gives the same package).

/** The pages an operator reads on a server; the design and development pages stay in the source. */
export const OPERATOR_DOCS = [
  'boot-sequence.md',
  'cfntools.md',
  'cli.md',
  'collectors.md',
  'config-drive.md',
  'configuration.md',
  'debian-package.md',
  'deployments.md',
  'doctor.md',
  'hooks.md',
  'keystone.md',
  'logging.md',
  'migrating.md',
  'pristine-boot.md',
  'proxies.md',
  'state-machine.md',
  'status.md',
  'systemd.md',
  'templates-and-phases.md',
  'troubleshooting.md',
  'wait-conditions.md',
  'zaqar-websockets.md',
];
/** The completion is found by the name typed: every command on PATH gets a link to the one script. */
const COMPLETED = ['os-config-agent', 'os-collect-config', 'os-apply-config', 'os-refresh-config'];

export const gzip = (data) => gzipSync(data, { level: 9 });

/**
 * Adds the files under the package root through `file(path, data, mode)` and `link(target, path)` (relative to the
 * root); `dir(path)` makes a directory 0755.
 */
export function addOperatorFiles({ repo, dist, dir, file, link }) {
  dir('usr/share/man/man1');
  const pages = readdirSync(path.join(dist, 'man')).filter((f) => f.endsWith('.1'));
  if (pages.length === 0) throw new Error(`${dist}/man has no manual pages: run "npm run build"`);
  for (const page of pages) file(`usr/share/man/man1/${page}.gz`, gzip(readFileSync(path.join(dist, 'man', page))));

  dir('usr/share/bash-completion/completions');
  file(
    'usr/share/bash-completion/completions/os-config-agent',
    readFileSync(path.join(dist, 'completion/os-config-agent')),
  );
  for (const name of COMPLETED.slice(1)) link('os-config-agent', `usr/share/bash-completion/completions/${name}`);

  const doc = 'usr/share/doc/os-config-agent';
  dir(doc);
  file(`${doc}/README.md.gz`, gzip(readFileSync(path.join(repo, 'README.md'))));
  // Debian's name for the upstream changelog.
  file(`${doc}/changelog.gz`, gzip(readFileSync(path.join(repo, 'CHANGELOG.md'))));
  for (const page of OPERATOR_DOCS) file(`${doc}/${page}.gz`, gzip(readFileSync(path.join(repo, 'docs', page))));
  return { pages: pages.length, docs: OPERATOR_DOCS.length + 2 };
}
