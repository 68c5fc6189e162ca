import { writeFileSync } from 'node:fs';
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
