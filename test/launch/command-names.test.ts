import { spawnSync } from 'node:child_process';
import { lstatSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import pkg from '../../package.json' with { type: 'json' };
import { AGENT_COMMAND, COMMAND_NAMES, COMPAT_COMMANDS, isCfnTool } from '../../src/cli/command-names.js';
import { programNameFrom } from '../../src/cli/command-names.js';
import { REPO, requireBundle } from '../helpers/bundle.js';

// One list of command names (src/cli/command-names.ts): the CLI chooses by it, the build writes it into dist/ and
// makes a launcher per name from it, the Debian package and the image element read the build's copy.

const dist = () => path.dirname(requireBundle());
// tap adds loader hooks to every child it sees start (NODE_OPTIONS, put back into any env given to spawn); they cannot
// load the extensionless launchers, so the launchers are started through env(1) without them.
const run = (file: string, args: string[]) =>
  spawnSync('/usr/bin/env', ['-u', 'NODE_OPTIONS', file, ...args], { encoding: 'utf8', timeout: 60_000 });

t.test('the CLI takes its command from the name it was started by, for every listed name', async (t) => {
  for (const name of COMMAND_NAMES) {
    t.equal(programNameFrom(`/usr/local/bin/${name}`), name);
    t.equal(programNameFrom(name), name);
  }
  t.equal(programNameFrom('/opt/os-config-agent/lib/os-config-agent.mjs'), AGENT_COMMAND);
  t.equal(
    programNameFrom('/usr/bin/os-apply-config.js'),
    'os-apply-config',
    'a script extension is not part of the name',
  );
  t.equal(programNameFrom('/usr/bin/something-else'), AGENT_COMMAND, 'an unknown name runs the agent');
  t.equal(programNameFrom(undefined), AGENT_COMMAND);
});

t.test("package.json names the same commands, each at the build's launcher", async (t) => {
  t.same(Object.keys(pkg.bin).sort(), [...COMMAND_NAMES].sort());
  const bin = pkg.bin as Record<string, string>;
  t.equal(bin[AGENT_COMMAND], `dist/${AGENT_COMMAND}.mjs`);
  for (const name of COMPAT_COMMANDS) t.equal(bin[name], `dist/bin/${name}`);
});

t.test('the build writes the list for the element and the Debian package', async (t) => {
  t.equal(
    readFileSync(path.join(dist(), 'command-names'), 'utf8'),
    `${COMMAND_NAMES.join('\n')}\n`,
    'one per line, the agent first',
  );
  // The entry each name starts: heat-cfntools' commands but cfn-signal their own (src/cfn-bin.ts), the rest the agent's.
  const entryOf = (name: string) => (isCfnTool(name) ? 'cfn-commands.cjs' : `${AGENT_COMMAND}.mjs`);
  t.same(JSON.parse(readFileSync(path.join(dist(), 'command-names.json'), 'utf8')), {
    agent: AGENT_COMMAND,
    compat: COMPAT_COMMANDS,
    entries: Object.fromEntries(COMMAND_NAMES.map((name) => [name, entryOf(name)])),
  });
  t.equal(
    readFileSync(path.join(dist(), 'command-entries'), 'utf8'),
    COMMAND_NAMES.map((name) => `${name} ${entryOf(name)}\n`).join(''),
    'NAME FILE per line, for the element',
  );
  t.equal(entryOf('cfn-init'), 'cfn-commands.cjs');
  t.equal(entryOf('cfn-signal'), `${AGENT_COMMAND}.mjs`, "cfn-signal is the agent's signal queue's");
  const element = readFileSync(
    path.join(REPO, 'elements/os-config-agent/install.d/20-os-config-agent-install'),
    'utf8',
  );
  t.match(element, 'mapfile -t commands < "${stage}/dist/command-names"');
  t.match(element, 'done < "${stage}/dist/command-entries"');
  const deb = readFileSync(path.join(REPO, 'scripts/package-deb.mjs'), 'utf8');
  t.match(deb, "readFileSync(path.join(dist, 'command-names.json')");
  for (const [file, text] of [
    ['element', element],
    ['package-deb', deb],
    ['build', readFileSync(path.join(REPO, 'scripts/build.mjs'), 'utf8')],
  ]) {
    t.notMatch(
      text,
      /['"]os-apply-config['"],\s*['"]os-refresh-config['"]|os-apply-config os-refresh-config/,
      `${file}: no list of names of its own`,
    );
  }
});

t.test('each compatibility launcher is a small file that runs the one bundle under its name', async (t) => {
  const entryShebang = readFileSync(requireBundle(), 'utf8').split('\n')[0];
  t.same(
    readdirSync(path.join(dist(), 'bin')).sort(),
    [...COMPAT_COMMANDS, 'package.json'].sort(),
    'one per name, and the package.json that makes them CommonJS for every Node.js 20',
  );
  t.same(JSON.parse(readFileSync(path.join(dist(), 'bin/package.json'), 'utf8')), { type: 'commonjs' });
  for (const name of COMPAT_COMMANDS) {
    const file = path.join(dist(), 'bin', name);
    t.ok(lstatSync(file).isFile(), `${name}: a file (npm leaves links out of a package)`);
    t.equal(statSync(file).mode & 0o111, 0o111, `${name}: executable`);
    const text = readFileSync(file, 'utf8');
    t.equal(text.split('\n')[0], entryShebang, `${name}: the entry's node flags`);
    t.ok(text.length < 300, `${name}: a launcher, not a bundle`);
    const version = run(file, ['--version']);
    t.equal(version.status, 0, version.stderr);
    t.equal(version.stdout, `${name} (os-config-agent) ${pkg.version}\n`, 'the name, and whose it is');
    t.equal(version.stderr, '');
    const help = run(file, ['--help']);
    t.match(help.stdout, new RegExp(`^Usage: ${name} `), `${name} --help`);
    const bad = run(file, ['--no-such-flag']);
    t.equal(bad.status, 2, `${name}: a usage error exits 2`);
    t.equal(bad.stdout, '');
    t.match(bad.stderr, /unknown option '--no-such-flag'/);
  }
});

t.test('two bundle formats, no code cache files, no V8 flags or stand-ins at run time', async (t) => {
  const files = readdirSync(dist(), { recursive: true, encoding: 'utf8' }).filter((f) => !f.startsWith('hooks'));
  // ES modules for the agent; CommonJS for heat-cfntools' commands but cfn-signal (src/cfn-bin.ts says why).
  t.same(
    files.filter((f) => /\.(cjs|cache)$/.test(f)).sort(),
    ['cfn-commands.cjs', 'chunks/cfn-main.cjs'],
    "CommonJS for heat-cfntools' commands only, no code cache beside it",
  );
  const code = files
    .filter((f) => /\.[mc]js$/.test(f))
    .map((f) => readFileSync(path.join(dist(), f), 'utf8'))
    .join('\n');
  t.notMatch(code, /setFlagsFromString/, 'V8 flags come from the command line');
  // V8's code cache through vm.Script only in the cfn commands' entry, for their one file on Node.js 20
  // (src/launch/code-cache.ts), kept in the compile cache's directory, never beside the bundle.
  const withCodeCache = files.filter(
    (f) => /\.[mc]js$/.test(f) && /cachedData|runInThisContext/.test(readFileSync(path.join(dist(), f), 'utf8')),
  );
  t.same(withCodeCache, ['cfn-commands.cjs'], "vm.Script's code cache in the cfn commands' entry only");
  t.notMatch(code, /lazy-builtin|standIn/, 'no stand-ins for Node builtins');
  t.match(code, /enableCompileCache/, "Node's own compile cache where Node has it");
});
