import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { runExecutableTemplate } from '../../src/apply/executable-template.js';

function script(dir: string, name: string, body: string): string {
  const file = path.join(dir, name);
  writeFileSync(file, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return file;
}

t.test('stdout is the body; stdin is the metadata as Python JSON', async (t) => {
  const dir = t.testdir({});
  t.equal(
    await runExecutableTemplate(script(dir, 'cat', 'cat'), { a: [1, 'é'], b: null }),
    '{"a": [1, "\\u00e9"], "b": null}',
  );
  t.equal(
    await runExecutableTemplate(script(dir, 'ignore', 'echo ok'), { big: 'x'.repeat(1 << 20) }),
    'ok\n',
    'a script that ignores stdin still works',
  );
});

t.test('failures name the script and carry its output', async (t) => {
  const dir = t.testdir({});
  await t.rejects(runExecutableTemplate(script(dir, 'fail', 'echo out; echo err >&2; exit 3'), {}), {
    code: 'ERR_TEMPLATE',
    message: /config script failed: .*fail exited with status 3; output: "out\\nerr\\n"/,
  });
  await t.rejects(runExecutableTemplate(script(dir, 'slow', 'sleep 5'), {}, 200), {
    code: 'ERR_TEMPLATE',
    message: /did not finish within/,
  });
  writeFileSync(path.join(dir, 'noshebang'), 'garbage', { mode: 0o755 });
  await t.rejects(runExecutableTemplate(path.join(dir, 'noshebang'), {}), {
    code: 'ERR_TEMPLATE',
    message: /config script failed/,
  });
});

t.test('a script that leaves a process holding its output is answered once it exits, not at the timeout', async (t) => {
  const dir = t.testdir({});
  const pidFile = path.join(dir, 'bg.pid');
  const started = performance.now();
  const body = await runExecutableTemplate(
    script(dir, 'bg', `sleep 300 & echo $! > '${pidFile}'; echo body`),
    {},
    120_000,
  );
  t.equal(body, 'body\n');
  t.ok(performance.now() - started < 30_000, 'well before the 120 s timeout');
  process.kill(Number(readFileSync(pidFile, 'utf8')), 'SIGKILL');
});

t.test('a script that prints without end is killed at the output cap (a mocked 1 KiB cap)', async (t) => {
  const dir = t.testdir({});
  const processGroup = await import('../../src/util/process-group.js');
  const { runExecutableTemplate: run } = await t.mockImport<typeof import('../../src/apply/executable-template.js')>(
    '../../src/apply/executable-template.js',
    {
      '../../src/util/process-group.js': {
        ...processGroup,
        runProcess: (o: Parameters<typeof processGroup.runProcess>[0]) =>
          processGroup.runProcess({ ...o, maxBufferBytes: 1024 }),
      },
    },
  );
  await t.rejects(run(script(dir, 'yes', 'yes'), {}, 120_000), {
    code: 'ERR_TEMPLATE',
    message: /produced more than \d+ bytes of output and was killed/,
  });
});
