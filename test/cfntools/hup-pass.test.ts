import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { toolContext } from '../../src/cfntools/cfn-context.js';
import { CfnCredentialsError } from '../../src/cfntools/cfn-errors.js';
import { loadHupConfig } from '../../src/cfntools/hup-config.js';
import { runHupPass, type HupPassDeps } from '../../src/cfntools/hup-pass.js';
import { HookLog } from '../../src/hooks/kit/hook-log.js';
import { createHttpClient } from '../../src/http/client.js';
import { createPathMapper } from '../../src/util/rooted-path.js';
import { startCfnServer, type CfnServer } from '../helpers/cfn-server.js';
import { pidGone } from '../helpers/fault-daemon.js';
import { holdFlock } from '../helpers/flock-holder.js';
import type { TapTest } from '../helpers/http-test-server.js';

// One cfn-hup check against a loopback heat-api-cfn, with every path under a test root: which hooks fire for which
// change, as which user, what a failing, hanging or homeless action does, services that died, and what is saved.
// Services are a recording fake systemctl (a shell script) on the PATH.

const http = createHttpClient({ defaultMaxBytes: 1024 * 1024, defaultRetries: 0, retryBaseMs: 1 });

interface Rig {
  root: string;
  dir: string;
  server: CfnServer;
  lines: string[];
  /** Runs one check with the configuration as it is on disk now. */
  pass(signal?: AbortSignal): ReturnType<typeof runHupPass>;
  write(file: string, text: string): void;
  read(file: string): string;
  serve(resource: string, metadata: unknown): void;
}

async function rig(t: TapTest, hooks: string): Promise<Rig> {
  const dir = t.testdir();
  const root = path.join(dir, 'root');
  const bin = path.join(dir, 'bin');
  mkdirSync(bin, { recursive: true });
  const server = await startCfnServer();
  t.teardown(() => server.close());
  const write = (file: string, text: string) => {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), text);
  };
  write(
    'etc/cfn/cfn-hup.conf',
    `[main]\nstack=${server.stackName}\ncredential-file=/etc/cfn/cfn-credentials\ninterval=1\n`,
  );
  write('etc/cfn/cfn-credentials', `AWSAccessKeyId=${server.accessKey}\nAWSSecretKey=${server.secret}\n`);
  write('etc/cfn/hooks.conf', hooks.replaceAll('$OUT', dir));
  // systemctl: "status" answers from $DIR/running-<service>, every call is recorded.
  writeFileSync(
    path.join(bin, 'systemctl'),
    `#!/bin/sh\necho "$*" >> ${dir}/systemctl.calls\n[ "$1" = status ] && { [ -e ${dir}/running-$2 ] || exit 3; }\nexit 0\n`,
    { mode: 0o755 },
  );
  const paths = createPathMapper(root);
  const lines: string[] = [];
  const log = new HookLog('cfn-hup', (_l, _m, _f, line) => lines.push(line));
  const env = { PATH: `${bin}:/usr/bin:/bin:/usr/sbin:/sbin` };
  const deps = (signal?: AbortSignal): HupPassDeps => ({
    paths,
    ctx: toolContext(env, log, { timeoutMs: 10_000, ...(signal ? { signal } : {}) }),
    http: async () => http,
    endpoint: async () => ({ url: server.metadataUrl, from: 'test' }),
    timeoutSeconds: 5,
  });
  return {
    root,
    dir,
    server,
    lines,
    pass: async (signal) => runHupPass(await loadHupConfig(paths), deps(signal)),
    write,
    read: (file) => (existsSync(path.join(dir, file)) ? readFileSync(path.join(dir, file), 'utf8') : ''),
    serve: (resource, metadata) => server.resources.set(resource, JSON.stringify(metadata)),
  };
}

const hook = (name: string, triggers: string, hookPath: string, action: string, extra = '') =>
  `[${name}]\ntriggers=${triggers}\npath=${hookPath}\naction=${action}\nrunas=root\n${extra}\n`;
const INIT = (marker: string) => ({
  'AWS::CloudFormation::Init': { config: { files: { '/x': { content: marker } } } },
});

t.test('each path fires on its own change: added, updated, removed; nothing twice', async (t) => {
  const r = await rig(
    t,
    hook('add', 'post.add', 'Resources.web.Metadata.extra', 'echo add >> $OUT/fired') +
      hook('update', 'post.update', 'Resources.web.Metadata.AWS::CloudFormation::Init', 'echo update >> $OUT/fired') +
      hook('remove', 'post.remove', 'Resources.web.Metadata.extra', 'echo remove >> $OUT/fired') +
      hook('whole', 'post.add,post.update', 'Resources.web.Metadata', 'echo whole >> $OUT/fired'),
  );
  r.serve('web', INIT('v1'));
  let report = await r.pass();
  t.same(report.errors, []);
  t.equal(r.read('fired'), 'whole\n', 'first check, nothing saved before: the paths present are added');
  t.ok(existsSync(path.join(r.root, 'var/cache/heat-cfntools/last_metadata_web')), 'the metadata is saved');
  report = await r.pass();
  t.same(report.actions, [], 'no change: no action');
  r.serve('web', { ...INIT('v1'), extra: 1 });
  await r.pass();
  t.equal(r.read('fired'), 'whole\nadd\nwhole\n', 'extra added: its post.add, and the whole metadata changed');
  r.serve('web', { ...INIT('v2'), extra: 1 });
  await r.pass();
  t.equal(r.read('fired'), 'whole\nadd\nwhole\nupdate\nwhole\n', 'the Init section changed');
  r.serve('web', INIT('v2'));
  await r.pass();
  t.equal(r.read('fired'), 'whole\nadd\nwhole\nupdate\nwhole\nremove\nwhole\n', 'extra removed');
});

t.test(
  'an action that fails, hangs or has no user is logged and bounded; the others run; cfn-hup goes on',
  async (t) => {
    const r = await rig(
      t,
      hook('fails', 'post.add', 'Resources.web.Metadata', 'echo out; echo err >&2; exit 3') +
        hook('hangs', 'post.add', 'Resources.web.Metadata', 'sleep 300 & echo $! > $OUT/child; wait', 'timeout=1') +
        hook('nouser', 'post.add', 'Resources.web.Metadata', 'echo never >> $OUT/fired').replace(
          'runas=root',
          'runas=no-such-user-29',
        ) +
        hook(
          'works',
          'post.add',
          'Resources.web.Metadata',
          'echo works >> $OUT/fired; echo "$HOME $USER" >> $OUT/fired',
        ),
    );
    r.serve('web', INIT('v1'));
    const report = await r.pass();
    t.same(
      report.actions.map((a) => [a.hook, a.ok, a.status]),
      [
        ['fails', false, 'status 3'],
        ['hangs', false, 'timed out'],
        ['nouser', false, 'no user no-such-user-29'],
        ['works', true, 'status 0'],
      ],
    );
    t.equal(r.read('fired'), 'works\n/root root\n', 'the others ran, with the runas user in HOME and USER');
    const child = Number(r.read('child'));
    t.ok(child > 0, 'the hanging action started a child');
    t.ok(await pidGone(child, 5000), "the hanging action's whole process group was killed");
    const log = r.lines.join('');
    t.match(
      log,
      /hook action failed hook=fails .*status=status 3 stdout=out\n stderr=err/,
      'a failure is logged with the output',
    );
    t.match(log, /hook action timed out and was killed hook=hangs .*seconds=1/);
    t.match(log, /hook action not run: the runas user does not exist hook=nouser .*runas=no-such-user-29/);
    t.ok(
      existsSync(path.join(r.root, 'var/cache/heat-cfntools/last_metadata_web')),
      'the metadata is saved all the same',
    );
  },
);

t.test('runas: the action runs as that user', { skip: process.getuid?.() === 0 ? false : 'needs root' }, async (t) => {
  const r = await rig(
    t,
    hook(
      'nobody',
      'post.add',
      'Resources.web.Metadata',
      'id -un > /tmp/oca-hup-$$; cat /tmp/oca-hup-$$ >&2; rm /tmp/oca-hup-$$',
    ).replace('runas=root', 'runas=nobody'),
  );
  r.serve('web', INIT('v1'));
  const report = await r.pass();
  t.same(
    report.actions.map((a) => a.ok),
    [true],
  );
  t.match(r.lines.join(''), /hook action succeeded hook=nobody .*stderr=nobody/);
});

t.test('a service cfn-init keeps running that died is started again and fires service.restarted', async (t) => {
  const r = await rig(
    t,
    hook('restarted', 'service.restarted', 'Resources.web.Metadata', 'echo restarted >> $OUT/fired'),
  );
  const init = {
    'AWS::CloudFormation::Init': {
      configSets: { default: ['one', 'two'] },
      one: { services: { sysvinit: { app: { ensureRunning: 'true' }, idle: { ensureRunning: false } } } },
      two: { services: { systemd: { db: { ensureRunning: true } } } },
      unused: { services: { sysvinit: { never: { ensureRunning: true } } } },
    },
  };
  r.serve('web', init);
  writeFileSync(path.join(r.dir, 'running-db.service'), '');
  await r.pass();
  t.equal(
    r.read('systemctl.calls'),
    'status app.service\nstart app.service\nstatus db.service\n',
    'only the dead one started',
  );
  t.equal(r.read('fired'), 'restarted\n', 'its hook fired once');
  t.match(r.lines.join(''), /service not running; starting it service=app/);
});

t.test('a resource whose metadata cannot be read is reported; the others are checked', async (t) => {
  const r = await rig(
    t,
    hook('gone', 'post.add', 'Resources.gone.Metadata', 'echo gone >> $OUT/fired') +
      hook('web', 'post.add', 'Resources.web.Metadata', 'echo web >> $OUT/fired'),
  );
  r.serve('web', INIT('v1'));
  const report = await r.pass();
  t.equal(report.errors.length, 1);
  t.match(report.errors[0], /^gone: heat-api-cfn at .* answered 404/);
  t.equal(r.read('fired'), 'web\n');
});

t.test('the credential file must be usable', async (t) => {
  const r = await rig(t, hook('web', 'post.add', 'Resources.web.Metadata', 'true'));
  r.write('etc/cfn/cfn-credentials', 'nothing here\n');
  const err = await r.pass().catch((e: unknown) => e);
  t.ok(err instanceof CfnCredentialsError);
  t.match(String(err), /\/etc\/cfn\/cfn-credentials has no AWSAccessKeyId line/);
});

t.test(
  'one check at a time: a live holder of the lock makes the check skip; a stopped check saves nothing',
  async (t) => {
    const r = await rig(t, hook('web', 'post.add', 'Resources.web.Metadata', 'echo web >> $OUT/fired'));
    r.serve('web', INIT('v1'));
    r.write('var/cache/heat-cfntools/.cfn-hup.lock', '');
    const holder = await holdFlock(path.join(r.root, 'var/cache/heat-cfntools/.cfn-hup.lock'), { named: true });
    t.teardown(() => holder.kill());
    const skipped = await r.pass();
    t.equal(skipped.ran, false);
    t.equal(r.read('fired'), '', 'nothing fired');
    await holder.kill();
    const stop = new AbortController();
    stop.abort();
    const stopped = await r.pass(stop.signal);
    t.equal(stopped.ran, true, "a dead holder's lock is taken over");
    t.notOk(
      existsSync(path.join(r.root, 'var/cache/heat-cfntools/last_metadata_web')),
      'stopped: nothing saved, so it fires next time',
    );
    await r.pass();
    t.equal(r.read('fired'), 'web\n');
  },
);
