import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { REPO } from '../helpers/bundle.js';
// @ts-expect-error: a build script in plain JavaScript, without types
import { bundledPackageDirs, licencesNamed } from '../../scripts/third-party-licenses.mjs';

// The bundles carry npm packages' code without their notices; dist/THIRD-PARTY-LICENSES carries them instead, listing
// what the build's metafiles say was bundled.

const listDirs = bundledPackageDirs as (metafiles: { inputs: Record<string, unknown> }[]) => string[];
const named = licencesNamed as (text: string) => string[];

t.test('the packages are read from the inputs of every bundle, scoped and nested ones included', async (t) => {
  const dirs = listDirs([
    { inputs: { 'src/bin.ts': {}, 'node_modules/got/dist/source/index.js': {}, 'node_modules/got/package.json': {} } },
    {
      inputs: {
        'node_modules/@sindresorhus/is/dist/index.js': {},
        'node_modules/cacheable-request/node_modules/keyv/src/index.js': {},
        'scripts/debug-off.cjs': {},
      },
    },
  ]);
  t.same(dirs, [
    'node_modules/@sindresorhus/is',
    'node_modules/cacheable-request/node_modules/keyv',
    'node_modules/got',
  ]);
});

t.test('licences named in a THIRD-PARTY-LICENSES text, each once', async (t) => {
  const text =
    'intro\n\nPackage: a 1.0.0\nLicense: MIT\n\ntext\n---\n\nPackage: b 2.0.0\nLicense: ISC\n\nLicense: not a header\n---\n\nPackage: c 1.0.0\nLicense: MIT\n\nx\n';
  t.same(named(text), ['ISC', 'MIT']);
});

const built = path.join(REPO, 'dist/THIRD-PARTY-LICENSES');
t.test(
  'the build lists what it bundled, with each notice',
  { skip: !existsSync(path.join(REPO, 'dist/os-config-agent.mjs')) && 'needs the build' },
  async (t) => {
    const text = readFileSync(built, 'utf8');
    for (const name of ['commander', 'pino', 'tar', 'yaml', 'ws'])
      t.match(text, new RegExp(`^Package: ${name} \\S+\\nLicense: \\S+`, 'm'), `${name} is listed`);
    t.match(text, /Copyright \(c\) 2011 TJ Holowaychuk/, "commander's notice is carried");
    // The stand-ins of scripts/build.mjs replace these packages: their code is not in the bundles.
    t.notMatch(text, /^Package: debug /m, 'a package replaced by a stand-in is not listed');
  },
);
