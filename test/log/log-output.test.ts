import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { LineSink } from '../../src/log/line-sink.js';
import { LogOutput } from '../../src/log/log-output.js';
import { requireBundle } from '../helpers/bundle.js';

// A descriptor's log lines in the reader's form: JSON for programs and journald, text at a terminal, the journal's
// priority prefix on journald's stream; `[agent] log_format` chooses otherwise.

function output(terminal: boolean) {
  const written: string[] = [];
  const sink = new LineSink({ write: (s: string) => void written.push(s) });
  return { out: new LogOutput(sink, 2, {}, () => terminal), written };
}

const line = '{"level":"warn","time":"2026-02-01T10:02:03.456Z","name":"os-config-agent","file":"/x","msg":"m"}\n';

t.test('a terminal gets text by default; anything else JSON', async (t) => {
  const tty = output(true);
  tty.out.write(line);
  t.same(tty.written, ['10:02:03.456 warn  m  file=/x\n']);
  const pipe = output(false);
  pipe.out.write(line);
  t.same(pipe.written, [line]);
});

t.test('log_format wins over the default; unset goes back to it', async (t) => {
  const tty = output(true);
  tty.out.setFormat('json');
  tty.out.write(line);
  tty.out.setFormat(undefined);
  tty.out.write(line);
  t.same(tty.written, [line, '10:02:03.456 warn  m  file=/x\n']);
  const pipe = output(false);
  pipe.out.setFormat('text');
  pipe.out.write(line);
  t.same(pipe.written, ['10:02:03.456 warn  m  file=/x\n']);
});

t.test(
  'the built agent at a terminal writes text; piped, JSON (the same command)',
  { skip: spawnSync('sh', ['-c', 'command -v script']).status !== 0 ? 'needs script (util-linux)' : false },
  async (t) => {
    const root = t.testdir();
    mkdirSync(path.join(root, 'etc'), { recursive: true });
    writeFileSync(path.join(root, 'hc.json'), '[]');
    const command = `${process.execPath} ${requireBundle()} deploy --root ${root} --heat-config /hc.json`;
    const env = { ...process.env };
    delete env.NODE_OPTIONS;
    const tty = spawnSync('script', ['-qec', command, '/dev/null'], { encoding: 'utf8', env, timeout: 60_000 });
    t.match(tty.stdout, /^\d\d:\d\d:\d\d\.\d{3} info {2}deployments processed {2}component=deploy deployments=0/m);
    t.notMatch(tty.stdout, /\{"level"/);
    const piped = spawnSync('sh', ['-c', command], { encoding: 'utf8', env, timeout: 60_000 });
    t.match(piped.stderr, /^\{"level":"info",.*"msg":"deployments processed"\}$/m);
    const json = spawnSync('script', ['-qec', `${command} --agent-log-format json`, '/dev/null'], {
      encoding: 'utf8',
      env,
      timeout: 60_000,
    });
    t.match(json.stdout, /^\{"level":"info",/m, 'log_format json: JSON at a terminal too');
  },
);
