import { mkdirSync } from 'node:fs';
import t from 'tap';
import { chooseTemplatesDir, DEFAULT_TEMPLATES_DIR, resolveTemplatesDir } from '../../src/apply/templates-dir.js';
import { createPathMapper } from '../../src/util/rooted-path.js';
import { captureLog } from '../helpers/log-capture.js';

t.test('configured value wins, then $OS_CONFIG_APPLIER_TEMPLATES (mapped), then the default', async (t) => {
  const root = t.testdir({});
  const paths = createPathMapper(root);
  t.same(await resolveTemplatesDir('/configured', paths, { OS_CONFIG_APPLIER_TEMPLATES: '/env' }), {
    dir: '/configured',
    deprecated: false,
  });
  t.same(await resolveTemplatesDir(undefined, paths, { OS_CONFIG_APPLIER_TEMPLATES: '/env' }), {
    dir: paths.map('/env'),
    deprecated: false,
  });
  t.same(await resolveTemplatesDir(undefined, paths, {}), { dir: paths.map(DEFAULT_TEMPLATES_DIR), deprecated: false });
});

t.test('old /opt/stack locations only when they exist and the default does not', async (t) => {
  const root = t.testdir({});
  const paths = createPathMapper(root);
  mkdirSync(paths.map('/opt/stack/os-config-applier/templates'), { recursive: true });
  t.same(await resolveTemplatesDir(undefined, paths, {}), {
    dir: paths.map('/opt/stack/os-config-applier/templates'),
    deprecated: true,
  });
  mkdirSync(paths.map('/opt/stack/os-apply-config/templates'), { recursive: true });
  t.same(await resolveTemplatesDir(undefined, paths, {}), {
    dir: paths.map('/opt/stack/os-apply-config/templates'),
    deprecated: true,
  });
  mkdirSync(paths.map(DEFAULT_TEMPLATES_DIR), { recursive: true });
  t.same(await resolveTemplatesDir(undefined, paths, {}), { dir: paths.map(DEFAULT_TEMPLATES_DIR), deprecated: false });
});

t.test(
  'chooseTemplatesDir: the chosen root, with one warning naming a deprecated one as the instance sees it',
  async (t) => {
    const root = t.testdir({});
    const paths = createPathMapper(root);
    const { log, lines } = captureLog();
    t.equal(await chooseTemplatesDir(undefined, paths, {}, log), paths.map(DEFAULT_TEMPLATES_DIR));
    t.same(lines, []);
    mkdirSync(paths.map('/opt/stack/os-apply-config/templates'), { recursive: true });
    t.equal(await chooseTemplatesDir(undefined, paths, {}, log), paths.map('/opt/stack/os-apply-config/templates'));
    t.match(lines, [
      { level: 'warn', msg: 'deprecated template directory in use', templates: '/opt/stack/os-apply-config/templates' },
    ]);
  },
);
