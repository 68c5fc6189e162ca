import { spawn } from 'node:child_process';
import t from 'tap';
import { LineSink } from '../../src/log/line-sink.js';

// LineSink over a writer that records every write it is given (each is one write(2) in production).
function recorded() {
  const writes: string[] = [];
  const sink = new LineSink({ write: (s: string) => void writes.push(s) });
  return { sink, writes };
}
const line = (i: number) => `{"msg":"writing file","path":"/etc/app/dir${i % 10}/file-${i}.conf"}\n`;

t.test('not held: each line is written at once, as it comes', async (t) => {
  const { sink, writes } = recorded();
  sink.write(line(1));
  t.same(writes, [line(1)]);
  sink.write(line(2));
  t.same(writes, [line(1), line(2)]);
});

t.test(
  'held: lines are gathered into blocks of about 8 KB; release writes the rest; order and bytes kept',
  async (t) => {
    const { sink, writes } = recorded();
    const release = sink.hold();
    const lines = Array.from({ length: 1000 }, (_, i) => line(i));
    for (const l of lines) sink.write(l);
    const total = lines.join('').length;
    t.ok(
      writes.length >= Math.floor(total / 8192) - 1 && writes.length <= Math.ceil(total / 8192),
      `${writes.length} writes for ${total} characters`,
    );
    for (const w of writes) t.ok(w.length >= 8192 && w.length < 8192 + 100, 'a full block');
    release();
    t.equal(writes.join(''), lines.join(''), 'every line, in order, after the release');
    sink.write(line(5000));
    t.equal(writes.at(-1), line(5000), 'after the release, lines go out one by one again');
  },
);

t.test('holds nest: lines go out when the last is released; a release called twice counts once', async (t) => {
  const { sink, writes } = recorded();
  const outer = sink.hold();
  const inner = sink.hold();
  sink.write(line(1));
  inner();
  inner();
  t.same(writes, [], 'the outer hold still holds');
  sink.write(line(2));
  outer();
  t.same(writes, [line(1) + line(2)], 'one block at the last release');
});

t.test('flush writes what is held and keeps the hold (pino logger.flush before a wait)', async (t) => {
  const { sink, writes } = recorded();
  const release = sink.hold();
  sink.write(line(1));
  let called = false;
  sink.flush(() => (called = true));
  t.same(writes, [line(1)]);
  t.ok(called, 'flush calls back');
  sink.write(line(2));
  t.same(writes, [line(1)], 'still held after the flush');
  release();
  t.same(writes, [line(1), line(2)]);
  sink.flush();
  t.equal(writes.length, 2, 'nothing held: flush writes nothing');
});

t.test('lines held when the process exits are written (process.exit inside a hold)', async (t) => {
  const script = `
    import { LineSink } from ${JSON.stringify(new URL('../../src/log/line-sink.ts', import.meta.url).pathname)};
    import { writeSync } from 'node:fs';
    const sink = new LineSink({ write: (s) => void writeSync(2, s) });
    sink.hold();
    for (let i = 0; i < 50; i++) sink.write('line ' + i + '\\n');
    process.exit(4);`;
  const tsLoader = process.execArgv.filter((a) => a.includes('@tapjs/typescript'));
  const child = spawn(process.execPath, [...tsLoader, '--input-type=module', '-e', script], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const code = await new Promise((resolve) => child.on('close', resolve));
  t.equal(code, 4);
  const lines = stderr.split('\n').filter((l) => l.startsWith('line '));
  t.equal(lines.length, 50);
  t.equal(lines[49], 'line 49');
});
