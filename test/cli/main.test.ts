import { mkdirSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import pkg from '../../package.json' with { type: 'json' };
import { SUBCOMMANDS } from '../../src/cli/subcommands.js';
import { runBundle } from '../helpers/bundle.js';

// The command line as a person meets it, through the built bundle: help that fits a screen (each command's own flags
// first), usage errors of two lines, flags a command does not use refused, bad values refused before anything runs,
// global flags before the subcommand.

/** Help longer than this does not fit a terminal; before this release every command's was 240 lines or more. */
const SCREEN = 50;

t.test('every command: --help fits a screen, its own flags first; --help-all adds the overrides', async (t) => {
  const top = await runBundle(['--help']);
  t.equal(top.code, 0);
  t.ok(top.stdout.split('\n').length <= SCREEN, `os-config-agent --help: ${top.stdout.split('\n').length} lines`);
  for (const sub of SUBCOMMANDS) t.match(top.stdout, new RegExp(`^  ${sub.name} `, 'm'), `lists ${sub.name}`);
  for (const sub of SUBCOMMANDS) {
    const help = await runBundle([sub.name, '--help']);
    t.equal(help.code, 0, sub.name);
    const lines = help.stdout.split('\n');
    t.ok(lines.length <= SCREEN, `${sub.name} --help: ${lines.length} lines`);
    const own = help.stdout.indexOf('\nOptions:\n');
    const common = help.stdout.indexOf('\nCommon options:\n');
    if (common !== -1) t.ok(own !== -1 && own < common, `${sub.name}: its own options before the common ones`);
    const all = await runBundle([sub.name, '--help-all']);
    t.equal(all.code, 0);
    if (/Configuration overrides: \d+ more flags/.test(help.stdout))
      t.match(all.stdout, /\nConfiguration overrides \(each sets/, `${sub.name} --help-all lists them`);
  }
  const status = await runBundle(['status', '--help']);
  t.ok(
    status.stdout.indexOf('--json') < status.stdout.indexOf('--root'),
    '--json, --wait and --timeout before the common flags',
  );
});

t.test('a usage error: exit 2, two lines on stderr, nothing on stdout', async (t) => {
  const cases: Array<[string[], RegExp]> = [
    [['status', '--one-time'], /^os-config-agent status: unknown option '--one-time'$/],
    [['status', '--print'], /unknown option '--print'/],
    [['status', '--force'], /unknown option '--force'/],
    [['run', '--polling-interval', 'abc'], /'abc' is invalid\. "abc" is not a number/],
    [['status', '--timeout', 'soon', '--wait'], /--timeout wants a number of seconds, not "soon"/],
    [['status', '--timeout', '5'], /--timeout is for --wait/],
    [['doctor', '--timeout', '0'], /must be a number of seconds above 0/],
    [['deploy', '--rerun', 'a', '--forget', 'b'], /--rerun and --forget cannot be used together/],
    [['--log-level', 'loud', 'status'], /unknown log level "loud"/],
    [['collect', 'no-such-collector'], /unknown collector "no-such-collector"/],
    [['no-such-command'], /unknown command 'no-such-command'/],
  ];
  for (const [args, message] of cases) {
    const r = await runBundle(args);
    t.equal(r.code, 2, args.join(' '));
    t.equal(r.stdout, '', `${args.join(' ')}: nothing on stdout`);
    const lines = r.stderr.trimEnd().split('\n');
    t.equal(lines.length, 2, `${args.join(' ')}: ${r.stderr}`);
    t.match(lines[0], message);
    t.match(lines[1], /^Try 'os-config-agent( [a-z-]+)? --help' for its options\.$/);
  }
});

t.test('global flags before the subcommand apply to it', async (t) => {
  const root = t.testdir();
  mkdirSync(path.join(root, 'var/lib/os-collect-config'), { recursive: true });
  const before = await runBundle(['--log-level', 'debug', '--root', root, 'status', '--json']);
  const after = await runBundle(['status', '--root', root, '--log-level', 'debug', '--json']);
  t.equal(before.code, after.code);
  t.same(JSON.parse(before.stdout), { ...JSON.parse(after.stdout) });
  const elsewhere = await runBundle(['--root', path.join(root, 'nowhere'), 'status']);
  t.equal(elsewhere.code, 2, 'the root given before the subcommand is the one used');
  t.match(elsewhere.stderr, /--root .*nowhere is not a directory/);
});

t.test('--version names the project for every command name', async (t) => {
  const r = await runBundle(['--version']);
  t.equal(r.stdout, `os-config-agent ${pkg.version}\n`);
});
