import t from 'tap';
import pkg from '../../package.json' with { type: 'json' };
import { newProgram, parseProgram, versionLine } from '../../src/cli/program.js';
import { AgentError } from '../../src/errors.js';

// How a command's outcome becomes the exit code, as every command name (and each compatibility bundle) runs it.

/** Run fn with process.stdout/stderr writes captured. */
async function captured(fn: () => Promise<number>): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const writeOut = process.stdout.write.bind(process.stdout);
  const writeErr = process.stderr.write.bind(process.stderr);
  process.stdout.write = ((s: string) => out.push(String(s)) > 0) as typeof process.stdout.write;
  process.stderr.write = ((s: string) => err.push(String(s)) > 0) as typeof process.stderr.write;
  try {
    const code = await fn();
    return { code, out: out.join(''), err: err.join('') };
  } finally {
    process.stdout.write = writeOut;
    process.stderr.write = writeErr;
  }
}

function program(action: () => Promise<void> | void) {
  let exit = 0;
  const p = newProgram('os-apply-config');
  p.option('--flag <v>', 'a flag').action(async () => action());
  return { p, setExit: (c: number) => (exit = c), exitCode: () => exit };
}

t.test('the exit code the action set is the result', async (t) => {
  const prog = program(() => {
    prog.setExit(255);
  });
  const r = await captured(() => parseProgram(prog.p, ['--flag', 'x'], 'os-apply-config', prog.exitCode));
  t.equal(r.code, 255);
});

t.test('--version names the project and its version and exits 0; --help exits 0', async (t) => {
  const version = program(() => undefined);
  const v = await captured(() => parseProgram(version.p, ['--version'], 'os-apply-config', version.exitCode));
  t.equal(v.code, 0);
  t.equal(v.out, `os-apply-config (os-config-agent) ${pkg.version}\n`, 'a compatibility name says whose it is');
  t.equal(versionLine('os-config-agent'), `os-config-agent ${pkg.version}`);
  const help = program(() => undefined);
  const h = await captured(() => parseProgram(help.p, ['--help'], 'os-apply-config', help.exitCode));
  t.equal(h.code, 0);
  t.match(h.out, /^Usage: os-apply-config /);
});

t.test('a usage error exits 2: one line saying what is wrong, one saying where to look', async (t) => {
  const prog = program(() => undefined);
  const r = await captured(() => parseProgram(prog.p, ['--no-such-flag'], 'os-apply-config', prog.exitCode));
  t.equal(r.code, 2);
  t.equal(
    r.err,
    "os-apply-config: unknown option '--no-such-flag'\nTry 'os-apply-config --help' for its options.\n",
    'never the whole help',
  );
  const near = program(() => undefined);
  const n = await captured(() => parseProgram(near.p, ['--flg', 'x'], 'os-apply-config', near.exitCode));
  t.equal(
    n.err.split('\n')[0],
    "os-apply-config: unknown option '--flg' (did you mean --flag?)",
    'the hint on the same line',
  );
});

t.test('a failure exits 1 with the command name, and for an AgentError its stable code', async (t) => {
  const agent = program(() => {
    throw new AgentError('ERR_CONFIG_INVALID', 'the configuration is broken; fix it');
  });
  const a = await captured(() => parseProgram(agent.p, [], 'os-apply-config', agent.exitCode));
  t.equal(a.code, 1);
  t.equal(a.err, 'os-apply-config: the configuration is broken; fix it [ERR_CONFIG_INVALID]\n');
  const plain = program(() => {
    throw new Error('disk on fire');
  });
  const p = await captured(() => parseProgram(plain.p, [], 'os-apply-config', plain.exitCode));
  t.equal(p.code, 1);
  t.equal(p.err, 'os-apply-config: disk on fire\n');
});

t.test("a failure that is not the agent's own has its message scrubbed before it is printed", async (t) => {
  const prog = program(() => {
    throw new TypeError('request to https://swift.example/v1/c/o?temp_url_sig=0123abcd&temp_url_expires=9 failed');
  });
  const r = await captured(() => parseProgram(prog.p, ['--flag', 'x'], 'os-apply-config', prog.exitCode));
  t.equal(r.code, 1);
  t.match(r.err, /^os-apply-config: request to https:\/\/swift\.example\/v1\/c\/o\?temp_url_sig=/);
  t.notMatch(r.err, /0123abcd/, 'the signature is not printed');
});
