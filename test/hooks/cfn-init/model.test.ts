import t from 'tap';
import { parseInit, toBoolean } from '../../../src/hooks/cfn-init/model.js';
import { packageOrder } from '../../../src/hooks/cfn-init/packages.js';
import { archiveType } from '../../../src/hooks/cfn-init/sources.js';

// The metadata model: which configs run in which order, and the small rules heat-cfntools applies to values.

const names = (init: unknown, selected?: string) => parseInit(init, selected).map((c) => c.name);

t.test("configSets pick the configs and their order, as heat-cfntools' ConfigsetsHandler", async (t) => {
  t.same(names({ config: {} }), ['config'], 'no configSets: the config named "config"');
  const init = { configSets: { default: ['b', { ConfigSet: 'x' }], x: 'a', y: ['c'] }, a: {}, b: {}, c: {} };
  t.same(names(init), ['b', 'a'], '"default", with a nested ConfigSet and a set given as one string');
  t.same(names(init, 'y, default'), ['c', 'b', 'a'], 'selected sets, comma separated, in the order given');
  t.throws(() => names({ config: {} }, 'y'), /"y" was asked for but the metadata has no configSets/);
  t.throws(() => names({ configSets: { default: [] }, config: {} }), /requested configSet "default" is empty/);
  t.throws(() => names({ configSets: { default: [{ ConfigSet: 'a', x: 1 }] } }), /must be \{"ConfigSet": name\}/);
});

t.test('commands are sorted by code point, as Python sorts them', async (t) => {
  const [config] = parseInit({
    config: {
      commands: {
        b: { command: 'x' },
        B: { command: 'x' },
        '10': { command: 'x' },
        '9': { command: 'x' },
        _a: { command: 'x' },
      },
    },
  });
  t.same(
    config?.commands.map((c) => c.name),
    ['10', '9', 'B', '_a', 'b'],
  );
});

t.test('values: booleans, modes, JSON content', async (t) => {
  for (const v of [true, 1, 'true', ' Yes ', '1']) t.equal(toBoolean(v), true, JSON.stringify(v));
  for (const v of [false, 0, 'false', 'no', '', null, undefined, 2, 'on'])
    t.equal(toBoolean(v), false, JSON.stringify(v));
  const [config] = parseInit({
    config: {
      files: {
        '/a': { content: 'x', mode: '000644' },
        '/b': { content: [1], mode: 755 },
        '/c': { content: 't', mode: '120777' },
      },
    },
  });
  t.same(
    config?.files.map((f) => f.mode),
    [0o644, 0o755, 0o120777],
    'octal text, a YAML number read by its digits, a link',
  );
  t.equal(config?.files[1]?.content?.toString(), '[\n    1\n]', 'JSON content with indent 4');
  t.throws(
    () => parseInit({ config: { files: { '/a': { content: 'x', mode: '060644' } } } }),
    /file type 060644 is not supported/,
  );
  t.throws(
    () => parseInit({ config: { files: { '/a': { content: 'x', source: 'http://h/x' } } } }),
    /has both "content" and "source"/,
  );
  t.throws(
    () => parseInit({ config: { commands: { a: { command: 'x', env: { 'A=B': 'x' } } } } }),
    /cannot be an environment variable name/,
  );
  t.throws(
    () => parseInit({ config: { users: { u: { uid: 1, shell: '/bin/bash' } } } }),
    /users\.u: unknown key "shell"/,
  );
  t.throws(() => parseInit({ config: { files: [] } }), /config "config" files: must be an object, not a list/);
});

t.test("package managers run in heat-cfntools' order", async (t) => {
  const sets = ['python', 'yum', 'apt', 'rubygems', 'rpm', 'dnf', 'zypper'].map((manager) => ({
    manager,
    packages: [],
  }));
  t.same(
    packageOrder(sets).map((s) => s.manager),
    ['rpm', 'apt', 'yum', 'dnf', 'python', 'rubygems', 'zypper'],
  );
});

t.test('archive types from URLs, as heat-cfntools reads them', async (t) => {
  const cases: Array<[string, string | undefined]> = [
    ['http://h/a.tar.gz', 'tgz'],
    ['http://h/a.TGZ', 'tgz'],
    ['http://h/a.tar.bz2', 'tbz2'],
    ['http://h/a.tbz2', 'tbz2'],
    ['http://h/a.tar', 'tar'],
    ['http://h/a.zip?sig=1', 'zip'],
    ['http://h/a.gz', 'gz'],
    ['http://h/a.bz2', 'bz2'],
    ['https://github.com/o/r/tarball/main', 'tgz'],
    ['https://api.github.com/repos/o/r/zipball/v1/', 'zip'],
    ['http://h/a.rar', undefined],
    ['http://h/tarball/x', undefined],
    ['not a url', undefined],
  ];
  for (const [url, type] of cases) t.equal(archiveType(url), type, url);
});
