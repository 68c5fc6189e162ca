import t from 'tap';
import { ControlFileError, MetadataError, TemplateError } from '../../src/apply/apply-errors.js';
import { AgentError } from '../../src/errors.js';

t.test('each error has its stable code', async (t) => {
  const cause = new Error('c');
  for (const [err, name, code] of [
    [new TemplateError('t', { cause }), 'TemplateError', 'ERR_TEMPLATE'],
    [new ControlFileError('c'), 'ControlFileError', 'ERR_CONTROL_FILE'],
    [new MetadataError('m'), 'MetadataError', 'ERR_METADATA'],
  ] as const) {
    t.ok(err instanceof AgentError);
    t.equal(err.name, name);
    t.equal(err.code, code);
  }
  t.equal(new TemplateError('t', { cause }).cause, cause);
});
