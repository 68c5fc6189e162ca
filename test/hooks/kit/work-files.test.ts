import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import t from 'tap';
import type { HookDeployment } from '../../../src/hooks/contract.js';
import { HookLog, type HookLogFields } from '../../../src/hooks/kit/hook-log.js';
import {
  makeDirs,
  OUTPUT_FILE_MAX_BYTES,
  readOutputs,
  removeOutputs,
  writeWorkFile,
} from '../../../src/hooks/kit/work-files.js';

// The files a hook writes for its tool and reads back from it: made and read with direct calls, so a tool's hostile
// leftovers (a link in a work file's place, a FIFO under an output's name) must neither redirect a write nor hold
// the agent.

function capturingLog(): { log: HookLog; warnings: Array<{ message: string; fields: HookLogFields }> } {
  const warnings: Array<{ message: string; fields: HookLogFields }> = [];
  const log = new HookLog('test', (level, message, fields) => {
    if (level === 'WARNING') warnings.push({ message, fields });
  });
  return { log, warnings };
}

const withOutputs = (...names: string[]) =>
  ({ id: 'd1', outputs: names.map((name) => ({ name })) }) as unknown as HookDeployment;

t.test('makeDirs makes the missing levels 0700, outermost first, and leaves existing ones alone', async (t) => {
  const dir = t.testdir({ there: {}, file: 'x' });
  const made: string[] = [];
  await makeDirs(path.join(dir, 'there/a/b'), made);
  t.same(made, [path.join(dir, 'there/a'), path.join(dir, 'there/a/b')]);
  t.equal(statSync(path.join(dir, 'there/a/b')).mode & 0o777, 0o700);
  const again: string[] = [];
  await makeDirs(path.join(dir, 'there/a/b'), again);
  t.same(again, [], 'nothing made the second time');
  await t.rejects(makeDirs(path.join(dir, 'file/sub')), { code: 'ENOTDIR' }, 'a file on the way is an error');
});

t.test('writeWorkFile truncates, sets the mode, and never writes through a link', async (t) => {
  const dir = t.testdir({ script: 'an older and longer script body', target: 'untouched' });
  await writeWorkFile(path.join(dir, 'script'), '#!/bin/sh\n', 0o700);
  t.equal(readFileSync(path.join(dir, 'script'), 'utf8'), '#!/bin/sh\n');
  t.equal(statSync(path.join(dir, 'script')).mode & 0o777, 0o700);
  symlinkSync(path.join(dir, 'target'), path.join(dir, 'planted'));
  await t.rejects(writeWorkFile(path.join(dir, 'planted'), 'x', 0o600), { code: 'ELOOP' });
  t.equal(readFileSync(path.join(dir, 'target'), 'utf8'), 'untouched');
});

t.test("removeOutputs removes this deployment's <id>.* only; a missing directory is fine", async (t) => {
  const dir = t.testdir({ 'd1.result': '1', 'd1.deploy_stdout': 'x', 'd10.result': 'other', d1: 'no dot' });
  await removeOutputs(dir, 'd1');
  t.same(readdirSync(dir).sort(), ['d1', 'd10.result']);
  await removeOutputs(path.join(dir, 'missing'), 'd1');
});

t.test('readOutputs reads declared outputs; missing ones are skipped, bad names and non-files warned', async (t) => {
  const dir = t.testdir({ 'd1.result': 'forty-two', 'd1.dir': {} });
  execFileSync('mkfifo', [path.join(dir, 'd1.fifo')]);
  const { log, warnings } = capturingLog();
  const outputs = await readOutputs(withOutputs('result', 'absent', 'a/b', 'fifo', 'dir'), path.join(dir, 'd1'), log);
  t.same(outputs, { result: 'forty-two' });
  t.same(
    warnings.map((w) => [w.message, w.fields.output]),
    [
      ['output name cannot be a file name; not read', '"a/b"'],
      ['output could not be read', 'fifo'],
      ['output could not be read', 'dir'],
    ],
  );
  t.match(warnings[1]?.fields.reason, /is not a regular file/, 'a FIFO is refused at once, not read');
  t.ok(existsSync(path.join(dir, 'd1.fifo')));
});

t.test('an output over 16 MiB is left out with a warning, not read; one of 16 MiB is read', async (t) => {
  const dir = t.testdir();
  // Sparse files: their size is what is checked, not their blocks.
  writeFileSync(path.join(dir, 'd1.huge'), '');
  truncateSync(path.join(dir, 'd1.huge'), OUTPUT_FILE_MAX_BYTES + 1);
  symlinkSync('/dev/zero', path.join(dir, 'd1.zero'));
  writeFileSync(path.join(dir, 'd1.edge'), '');
  truncateSync(path.join(dir, 'd1.edge'), OUTPUT_FILE_MAX_BYTES);
  const { log, warnings } = capturingLog();
  const outputs = await readOutputs(withOutputs('huge', 'zero', 'edge'), path.join(dir, 'd1'), log);
  t.same(Object.keys(outputs), ['edge']);
  t.equal(outputs.edge?.length, OUTPUT_FILE_MAX_BYTES);
  t.same(
    warnings.map((w) => [w.fields.output, w.fields.reason]),
    [
      ['huge', `${path.join(dir, 'd1.huge')} is 16777217 bytes, over the 16777216-byte limit of an output`],
      ['zero', `${path.join(dir, 'd1.zero')} is not a regular file`],
    ],
  );
});

t.test('an output named __proto__ is an own property, not the prototype', async (t) => {
  const dir = t.testdir();
  mkdirSync(path.join(dir, 'out'));
  writeFileSync(path.join(dir, 'out', 'd1.__proto__'), 'p');
  const { log } = capturingLog();
  const outputs = await readOutputs(withOutputs('__proto__'), path.join(dir, 'out', 'd1'), log);
  t.equal(Object.getOwnPropertyDescriptor(outputs, '__proto__')?.value, 'p');
  t.equal(Object.getPrototypeOf(outputs), Object.prototype);
});
