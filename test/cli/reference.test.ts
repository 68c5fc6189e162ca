import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import pkg from '../../package.json' with { type: 'json' };
import { SUBCOMMANDS } from '../../src/cli/subcommands.js';
import { REPO, requireBundle, runBundle } from '../helpers/bundle.js';

// What the build writes from the command definitions: a manual page per command, read with man(1) as a person would
// (`man -l`), and the bash completion, run in bash as the shell runs it.

const MAN = path.join(REPO, 'dist/man');
const COMPLETION = path.join(REPO, 'dist/completion/os-config-agent');
const noMan = spawnSync('sh', ['-c', 'command -v man']).status !== 0 ? 'needs man (man-db)' : false;

t.before(() => requireBundle());

t.test('a page for every command; each reads without a warning and lists its flags', { skip: noMan }, async (t) => {
  const expected = [
    'os-config-agent',
    ...SUBCOMMANDS.map((s) => `os-config-agent-${s.name}`),
    'os-collect-config',
    'os-apply-config',
    'os-refresh-config',
  ].sort();
  t.same(
    readdirSync(MAN)
      .map((f) => f.replace(/\.1$/, ''))
      .sort(),
    expected,
    "heat-cfntools ships cfn-signal(1), cfn-init(1), ...; the agent's are os-config-agent-cfn-signal(1), ...",
  );
  for (const page of expected) {
    const r = spawnSync('man', ['--warnings', '-l', path.join(MAN, `${page}.1`)], {
      encoding: 'utf8',
      env: { ...process.env, LANG: 'C.UTF-8', MANWIDTH: '80', MAN_KEEP_FORMATTING: '' },
    });
    t.equal(r.status, 0, page);
    t.equal(r.stderr, '', `${page}: no groff warning`);
    t.match(r.stdout, /^NAME\n/m, page);
    t.match(r.stdout, new RegExp(`os-config-agent ${pkg.version.replace(/\./g, '\\.')}`), `${page}: the version`);
  }
  const status = spawnSync('man', ['-l', path.join(MAN, 'os-config-agent-status.1')], {
    encoding: 'utf8',
    env: { ...process.env, MANWIDTH: '80' },
  }).stdout;
  for (const flag of ['--json', '--wait', '--timeout', '--root', '--cachedir', '--agent-state-dir'])
    t.match(status, flag, `status(1) has ${flag}, as --help-all does`);
  t.match(status, /^EXIT STATUS\n\s+0 all done and signalled, 1 a deployment failed/m);
  const run = readFileSync(path.join(MAN, 'os-config-agent-run.1'), 'utf8');
  t.match(run, /^\.SH CONFIGURATION OVERRIDES$/m, 'run(1) lists every override');
  t.match(run, /cfn\\-metadata\\-url/);
});

t.test('the manual pages say what --help-all says: every flag of each', async (t) => {
  for (const sub of SUBCOMMANDS) {
    const help = (await runBundle([sub.name, '--help-all'])).stdout;
    const page = readFileSync(path.join(MAN, `os-config-agent-${sub.name}.1`), 'utf8').replace(/\\-/g, '-');
    for (const flag of help.match(/--[a-z][a-z0-9-]*/g) ?? [])
      if (flag !== '--help' && flag !== '--help-all') t.ok(page.includes(flag), `${sub.name}(1) has ${flag}`);
  }
});

/** What bash offers for the words typed (the last one is being completed). */
function complete(words: string[]): string[] {
  const fn = `_${words[0]!.replace(/[^A-Za-z0-9]/g, '_')}`;
  const script = `source ${COMPLETION}; COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; ${fn}; printf '%s\\n' "\${COMPREPLY[@]}"`;
  const r = spawnSync('bash', ['-c', script], { encoding: 'utf8', cwd: REPO });
  if (r.status !== 0) throw new Error(r.stderr);
  return r.stdout.split('\n').filter(Boolean).sort();
}

t.test('bash completion: commands, their flags, flag values; global flags before the command', async (t) => {
  t.ok(existsSync(COMPLETION));
  t.same(complete(['os-config-agent', 'sta']), ['status']);
  t.same(complete(['os-config-agent', 'co']), ['collect', 'collect-logs', 'completion']);
  t.same(complete(['os-config-agent', 'status', '--w']), ['--wait']);
  t.same(complete(['os-config-agent', '--root', '/tmp', 'status', '--js']), ['--json'], 'a global value is skipped');
  t.same(complete(['os-config-agent', 'status', '--log-level', 'w']), ['warn']);
  t.same(complete(['os-config-agent', 'run', '--config-dir', 'doc']), ['docs'], 'directories after --config-dir');
  t.notOk(complete(['os-config-agent', 'status', '--']).includes('--one-time'), 'status does not take --one-time');
  t.same(complete(['os-collect-config', '--print']), ['--print', '--print-cachedir']);
  t.same(complete(['os-refresh-config', '--print-p']), ['--print-phases']);
  const printed = await runBundle(['completion']);
  t.equal(printed.code, 0);
  t.equal(printed.stdout, readFileSync(COMPLETION, 'utf8'), '`completion` prints what the package installs');
});
