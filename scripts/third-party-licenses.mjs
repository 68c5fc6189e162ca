// The npm packages the bundles carry, with their licences: esbuild copies their code into dist/ without their
// notices (legalComments: 'none' keeps the bundles small), and their licences (MIT, ISC, BSD-2-Clause, BlueOak-1.0.0)
// ask that a copy carries the notice. scripts/build.mjs writes dist/THIRD-PARTY-LICENSES from the bundles' metafiles,
// so the list is what was bundled, not what package.json asks for; the image and the Debian package ship that file.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const IN_NODE_MODULES = /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//;
const LICENCE_FILE = /^(licen[cs]e|copying)(\.(md|txt|markdown))?$/i;

/** The package directories (relative to the repository) whose files any of the metafiles' bundles read. */
export function bundledPackageDirs(metafiles) {
  const dirs = new Set();
  for (const meta of metafiles)
    for (const input of Object.keys(meta.inputs)) {
      const dir = IN_NODE_MODULES.exec(input)?.[1];
      if (dir) dirs.add(dir);
    }
  return [...dirs].sort();
}

/** Name, version, licence and licence text of one bundled package. */
export function packageLicence(dir) {
  const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
  const licence = typeof manifest.license === 'string' ? manifest.license : 'UNKNOWN';
  const file = readdirSync(dir).find((f) => LICENCE_FILE.test(f));
  const text = file
    ? readFileSync(path.join(dir, file), 'utf8').trim()
    : `The package has no licence file; its package.json says: ${licence}.`;
  return { name: manifest.name, version: manifest.version, licence, text };
}

/** The text of dist/THIRD-PARTY-LICENSES: one section per bundled package, headed by `Package:` and `License:` lines. */
export function thirdPartyLicences(metafiles) {
  const packages = bundledPackageDirs(metafiles)
    .filter((dir) => existsSync(path.join(dir, 'package.json')))
    .map(packageLicence);
  const sections = packages.map((p) => `Package: ${p.name} ${p.version}\nLicense: ${p.licence}\n\n${p.text}\n`);
  return {
    packages,
    text: `os-config-agent bundles the following npm packages into its JavaScript files.\n\n${sections.join('\n---\n\n')}`,
  };
}

/** The distinct licences named by the `License:` lines of a THIRD-PARTY-LICENSES text, sorted. */
export function licencesNamed(text) {
  return [...new Set([...text.matchAll(/^Package: .*\nLicense: (.*)$/gm)].map((m) => m[1]))].sort();
}
