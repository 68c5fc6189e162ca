import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import type { CollectedPair } from '../../src/collectors/types.js';
import { loadConfig } from '../../src/config/load.js';
import type { CollectionOutcome } from '../../src/daemon/collect-all.js';
import { scrubText } from '../../src/log/redact.js';
import { selfConfigHook } from '../../src/self-config/self-config-hook.js';
import { captureLog } from '../helpers/log-capture.js';
import { rawLog, teeLogger } from '../helpers/http-test-server.js';

// The after-collect hook on its own: when it writes, what it keeps, what it never does.

const outcome = (pairs: CollectedPair[]): CollectionOutcome => ({
  pairs,
  files: [],
  changedKeys: [],
  failures: [],
  available: [],
});
const section = (secret: string) => ({
  'os-collect-config': {
    collectors: ['cfn', 'local'],
    cfn: {
      metadata_url: 'http://127.0.0.1:8000/v1/',
      access_key_id: 'AK1',
      secret_access_key: secret,
      stack_name: 's',
      path: 'server.Metadata',
    },
  },
});

async function setup(t: { testdir(): string }, configText?: string, cli: Record<string, Record<string, string>> = {}) {
  const root = t.testdir();
  const target = path.join(root, 'etc/os-collect-config.conf');
  if (configText !== undefined) {
    mkdirSync(path.dirname(target), { recursive: true });
    writeFileSync(target, configText, { mode: 0o600 });
  }
  const loaded = await loadConfig({ root, cli });
  const captured = captureLog('trace');
  const raw = rawLog();
  const log = teeLogger(captured.log, raw.log);
  return { root, target, loaded, captured, raw, ctx: { loaded, log, signal: new AbortController().signal } };
}

t.test('writes the file 0600 and asks for a reload; an unchanged rendering asks for nothing', async (t) => {
  const { target, ctx, captured, raw } = await setup(t);
  const pairs = [{ key: 'heat_local', value: section('the-cfn-secret-1') }];
  t.same(await selfConfigHook(outcome(pairs), ctx), { reload: true });
  t.equal(statSync(target).mode & 0o777, 0o600);
  t.match(readFileSync(target, 'utf8'), /collectors = cfn\ncollectors = local\n\n\[cfn\]\n/);
  const inode = statSync(target).ino;
  t.same(await selfConfigHook(outcome(pairs), ctx), { reload: false });
  t.equal(statSync(target).ino, inode, 'not rewritten');
  t.ok(
    captured.lines.some((l) => l.msg === 'agent configuration rewritten from os-collect-config metadata; reloading'),
  );
  t.equal(scrubText('x the-cfn-secret-1'), 'x [REDACTED]', 'the secret from metadata is registered for scrubbing');
  t.notOk(raw.text().includes('the-cfn-secret-1'), 'never logged');
});

t.test('an unchanged file someone made readable goes back to 0600 without a reload', async (t) => {
  const { target, ctx } = await setup(t);
  const pairs = [{ key: 'heat_local', value: section('s-0123456') }];
  await selfConfigHook(outcome(pairs), ctx);
  chmodSync(target, 0o644);
  t.same(await selfConfigHook(outcome(pairs), ctx), { reload: false });
  t.equal(statSync(target).mode & 0o777, 0o600);
});

t.test('nothing to do without an os-collect-config key, or with config_target empty', async (t) => {
  const { target, ctx } = await setup(t);
  t.same(await selfConfigHook(outcome([{ key: 'local', value: { a: 1 } }]), ctx), { reload: false });
  t.notOk(existsSync(target));
  const off = await setup(t, undefined, { agent: { config_target: '' } });
  t.same(await selfConfigHook(outcome([{ key: 'heat_local', value: section('s-0123456') }]), off.ctx), {
    reload: false,
  });
  t.notOk(existsSync(off.target));
});

t.test("later pairs win: a transport collector's own os-collect-config overrides heat_local's", async (t) => {
  const { target, ctx } = await setup(t);
  const later = {
    'os-collect-config': {
      collectors: ['heat', 'local'],
      heat: {
        auth_url: 'http://k/v3',
        user_id: 'u',
        password: 'p-987654',
        project_id: 'p',
        stack_id: 's/i',
        resource_name: 'server',
      },
      cfn: { metadata_url: null, access_key_id: null, secret_access_key: null, stack_name: null, path: null },
    },
  };
  await selfConfigHook(
    outcome([
      { key: 'heat_local', value: section('s-0123456') },
      { key: 'cfn', value: later },
    ]),
    ctx,
  );
  const text = readFileSync(target, 'utf8');
  t.match(text, /collectors = heat\n/);
  t.match(text, /\[heat\]/);
  t.notMatch(text, /\[cfn\]/);
});

t.test("the existing file's own sections survive the rewrite", async (t) => {
  const { target, ctx } = await setup(
    t,
    '[DEFAULT]\ncommand = my-command\ncollectors = heat_local\n[agent]\npoll_jitter = 0\n',
  );
  t.same(await selfConfigHook(outcome([{ key: 'heat_local', value: section('s-0123456') }]), ctx), { reload: true });
  const text = readFileSync(target, 'utf8');
  t.match(text, /command = my-command\n/);
  t.match(text, /\[agent\]\npoll_jitter = 0\n/);
  t.notMatch(text, /collectors = heat_local/);
});

t.test('a target that cannot be written is logged and leaves the configuration alone', async (t) => {
  const { root, ctx, captured } = await setup(t);
  // The parent "directory" is a file.
  writeFileSync(path.join(root, 'etc'), 'not a directory');
  t.same(await selfConfigHook(outcome([{ key: 'heat_local', value: section('s-0123456') }]), ctx), { reload: false });
  t.ok(
    captured.lines.some(
      (l) =>
        l.msg === 'could not write the agent configuration from os-collect-config metadata; keeping the current one' &&
        l.level === 'error',
    ),
  );
});

t.test('a config_target the agent does not read is written, with a warning', async (t) => {
  const { root, target, ctx, captured } = await setup(t, '[DEFAULT]\ncommand = c\n', {
    agent: { config_target: '/etc/other.conf' },
  });
  t.same(await selfConfigHook(outcome([{ key: 'heat_local', value: section('s-0123456') }]), ctx), { reload: true });
  t.ok(existsSync(path.join(root, 'etc/other.conf')));
  t.equal(readFileSync(target, 'utf8'), '[DEFAULT]\ncommand = c\n', 'the file read is untouched');
  t.ok(
    captured.lines.some(
      (l) =>
        l.msg ===
        'config_target is not among the config files this agent reads; the new settings apply only where it is read',
    ),
  );
});

t.test(
  "a config_target in the configuration directory of the file read (the Debian package's 00-heat.conf): no warning, the main file untouched",
  async (t) => {
    const { root, target, ctx, captured } = await setup(t, '[DEFAULT]\ncommand = c\n', {
      agent: { config_target: '/etc/os-collect-config.conf.d/00-heat.conf' },
    });
    t.same(await selfConfigHook(outcome([{ key: 'heat_local', value: section('s-0123456') }]), ctx), {
      reload: true,
    });
    const written = path.join(root, 'etc/os-collect-config.conf.d/00-heat.conf');
    t.match(readFileSync(written, 'utf8'), /^# Written by os-config-agent/);
    t.equal(statSync(written).mode & 0o777, 0o600);
    t.equal(readFileSync(target, 'utf8'), '[DEFAULT]\ncommand = c\n', "the operator's file is untouched");
    t.notOk(
      captured.lines.some((l) => l.level === 'warn'),
      'nothing to warn about',
    );
  },
);

t.test('unreadable lines in the existing file are reported, then dropped', async (t) => {
  const { target, ctx, captured } = await setup(t, '[DEFAULT]\ncommand = c\nthis line is junk\n');
  await selfConfigHook(outcome([{ key: 'heat_local', value: section('s-0123456') }]), ctx);
  t.notMatch(readFileSync(target, 'utf8'), /junk/);
  t.ok(captured.lines.some((l) => l.msg === 'existing config file has unreadable lines; they are dropped on rewrite'));
});
