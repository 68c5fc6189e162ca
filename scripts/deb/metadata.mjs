// The Debian package's metadata (docs/debian-package.md): its control file, copyright file and lintian overrides.
// Maintainer and Homepage come from package.json (`author`, `homepage`), the one place the project names itself, so
// the package never names another project's page or a placeholder address.

/** The Python packages whose commands this one takes over: apt removes them when it is installed. */
export const TAKEN_OVER = ['python3-os-collect-config', 'python3-os-apply-config', 'python3-os-refresh-config'];

function person(author) {
  if (typeof author === 'string') return author;
  if (author && typeof author.name === 'string' && typeof author.email === 'string')
    return `${author.name} <${author.email}>`;
  return undefined;
}

/** `Name <address>` of package.json's author, and its homepage when it has one; a package without an author fails. */
export function packageIdentity(pkg) {
  const maintainer = person(pkg.author);
  if (!maintainer || !/^[^<>]+ <[^<>\s@]+@[^<>\s@]+>$/.test(maintainer))
    throw new Error('package.json has no "author" of the form "Name <address>": the package needs its Maintainer');
  return { maintainer, ...(typeof pkg.homepage === 'string' ? { homepage: pkg.homepage } : {}) };
}

export function control({ version, arch, node, installedKiB, identity }) {
  const depends = node === 'system' ? 'nodejs (>= 20), systemd' : 'libc6 (>= 2.28), libgcc-s1, libstdc++6, systemd';
  return [
    'Package: os-config-agent',
    `Version: ${version}`,
    `Architecture: ${arch}`,
    `Maintainer: ${identity.maintainer}`,
    `Installed-Size: ${installedKiB}`,
    `Depends: ${depends}`,
    'Recommends: cloud-init',
    'Suggests: bash-completion, jq',
    // Takes the os-collect-config, os-apply-config and os-refresh-config commands over from Debian's Python packages:
    // apt removes those when this is installed (docs/debian-package.md says why not diversions).
    `Conflicts: ${TAKEN_OVER.join(', ')}`,
    `Replaces: ${TAKEN_OVER.join(', ')}`,
    `Provides: ${TAKEN_OVER.join(', ')}`,
    'Section: admin',
    'Priority: optional',
    ...(identity.homepage ? [`Homepage: ${identity.homepage}`] : []),
    'Description: OpenStack Heat in-instance configuration agent',
    ' Collects OpenStack Heat metadata (EC2 metadata service, config drive, CFN,',
    ' Heat, Swift TempURL, Zaqar, local files), renders os-apply-config template',
    ' trees, runs os-refresh-config phases and Heat software deployments through',
    ' the heat-config hooks (script, puppet, chef, salt, ansible, apply-config,',
    ' cfn-init, docker-cmd, docker-compose, hiera, json-file, kubelet) and signals',
    ' the results back to Heat. A drop-in replacement for the Python',
    ' os-collect-config, os-apply-config and os-refresh-config commands and the',
    ' heat-agents hooks.',
    '',
  ].join('\n');
}

/**
 * The copyright file. `bundledLicences` are the licences of the npm packages the JavaScript files carry
 * (scripts/third-party-licenses.mjs); their notices and texts are in THIRD-PARTY-LICENSES beside this file.
 */
export function copyright(identity, bundledLicences) {
  return `Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: os-config-agent
Upstream-Contact: ${identity.maintainer}
${identity.homepage ? `Source: ${identity.homepage}\n` : ''}
Files: *
Copyright: 2026 os-config-agent developers
License: Apache-2.0

Files: usr/lib/os-config-agent/lib/* usr/libexec/heat-config/hooks/*
Copyright: 2026 os-config-agent developers
 The authors of the npm packages these files bundle, named with their copyright notices in
 /usr/share/doc/os-config-agent/THIRD-PARTY-LICENSES.
License: Apache-2.0 and ${bundledLicences.join(' and ')}
 The licence of each bundled package, and its text, is in /usr/share/doc/os-config-agent/THIRD-PARTY-LICENSES.

Files: usr/lib/os-config-agent/node/*
Copyright: Node.js contributors and others (see usr/lib/os-config-agent/node/LICENSE)
License: Expat and others
 See /usr/lib/os-config-agent/node/LICENSE.

License: Apache-2.0
 On Debian systems, the full text of the Apache License, Version 2.0 can be found in
 /usr/share/common-licenses/Apache-2.0.
`;
}

export function lintianOverrides(node) {
  const lines = [
    '# The hooks are started by the Node.js the agent runs on (usr/lib/os-config-agent/bin/node), whichever it is: a',
    '# stock image has no other (Debian 12 has none new enough), and a hook run by hand must work there.',
    'os-config-agent: wrong-path-for-interpreter /usr/lib/os-config-agent/bin/node != /usr/bin/node [usr/libexec/heat-config/hooks/*]',
  ];
  if (node === 'bundled')
    lines.push(
      "# The official Node.js binary is the runtime this package carries because the distribution's is too old; it links",
      '# zlib statically as upstream builds it.',
      'os-config-agent: embedded-library zlib [usr/lib/os-config-agent/node/bin/node]',
      '# That runtime is in this package: the hooks need no nodejs package.',
      'os-config-agent: missing-dep-for-interpreter /usr/lib/os-config-agent/bin/node (does not satisfy nodejs:any) [usr/libexec/heat-config/hooks/*]',
    );
  lines.push(
    "# The operator's configuration: it may hold credentials (a proxy's password, a transport's), so only root reads it.",
    'os-config-agent: non-standard-file-perm 0600 != 0644 [etc/os-collect-config.conf]',
  );
  return `${lines.join('\n')}\n`;
}
