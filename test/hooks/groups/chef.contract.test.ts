import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import type { TapTest } from '../../helpers/http-test-server.js';
import {
  DEPLOY_INPUTS,
  FAKE_TOOLS,
  SECRET_INPUTS,
  SYSTEM_PATH,
  assertNoSecrets,
  hookDirs,
  modeOf,
  readRecords,
  HOOK_MODES,
} from '../hook-process.js';

// Contract tests of the chef hook: Chef cannot be installed here, so a recording fake chef-client (on PATH, or named
// by HEAT_CHEF_CMD) keeps the command line, client.rb and node JSON the hook gives it, and replays a result.
// The kitchen is cloned with the real git from a repository in the test directory.

function setup(t: TapTest) {
  const dirs = hookDirs(t, 'chef');
  const record = path.join(dirs.dir, 'record.jsonl');
  const env: Record<string, string> = {
    PATH: `${FAKE_TOOLS}:${SYSTEM_PATH}`,
    HOME: dirs.home,
    HEAT_CHEF_WORKING: dirs.working,
    HEAT_CHEF_OUTPUTS: dirs.outputs,
    FAKE_TOOL_RECORD: record,
    GIT_CONFIG_NOSYSTEM: '1',
  };
  return { ...dirs, record, env };
}

/** A whole line of the hook's log: heat-config's time stamp and the hook's name, the level, then `rest` (literal text). */
function logLine(level: 'INFO' | 'WARNING' | 'ERROR', rest: string): RegExp {
  const literal = rest.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&');
  return new RegExp(
    String.raw`^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] \(heat-config-chef\) \[${level}\] ${literal}$`,
    'm',
  );
}

const fqdn = () => execFileSync('hostname', ['-f'], { encoding: 'utf8' }).trim();

const deployment = (config: unknown, extra: Record<string, unknown> = {}) => ({
  id: 'chef-0001',
  name: 'cfg',
  group: 'chef',
  creation_time: '2024-01-01T00:00:00Z',
  options: {},
  inputs: [
    { name: 'app_port', type: 'Number', value: 8080 },
    { name: 'app_name', value: "it's mine" },
    { name: 'features', type: 'Json', value: { cache: true } },
    { name: 'environment', value: "prod'uction" },
    ...DEPLOY_INPUTS,
    ...SECRET_INPUTS,
  ],
  outputs: [],
  config,
  ...extra,
});

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(
    `${mode}: contract: chef-client -z with client.rb and the node JSON; outputs, status and output come back`,
    async (t) => {
      const { working, outputs, record, env } = setup(t);
      const run = await runIn(
        'chef',
        deployment('["recipe[app]", "role[web]"]', { outputs: [{ name: 'url' }, { name: 'absent' }] }),
        {
          env: {
            ...env,
            FAKE_TOOL_STDOUT: 'chef ran',
            FAKE_TOOL_STDERR: 'warnings',
            FAKE_TOOL_OUTPUTS: '{"url":"http://app"}',
          },
        },
      );
      t.equal(run.code, 0, 'the hook exits 0', { stderr: run.stderr });
      t.same(run.result, {
        url: 'http://app',
        deploy_stdout: 'chef ran',
        deploy_stderr: 'warnings',
        deploy_status_code: 0,
      });

      const [rec] = readRecords(record);
      if (!rec) throw new Error('the fake chef-client did not run');
      const clientRb = path.join(working, 'client.rb');
      const nodeDir = path.join(working, 'node');
      const nodeFile = path.join(nodeDir, `${fqdn()}.json`);
      t.same(rec.argv, ['-z', '--config', clientRb, '-j', nodeFile], 'the upstream command line');
      t.equal(rec.cwd, working);
      t.equal(rec.env.heat_outputs_path, path.join(outputs, 'chef-0001'));
      const kitchen = path.join(working, 'kitchen');
      t.same(
        rec.files[clientRb],
        {
          mode: '600',
          content: [
            'log_level :debug',
            'log_location STDOUT',
            'local_mode true',
            'chef_zero.enabled true',
            `cookbook_path '${kitchen}/cookbooks'`,
            `role_path '${kitchen}/roles'`,
            `environment_path '${kitchen}/environments'`,
            "environment 'prod\\'uction'",
            `node_path '${nodeDir}'`,
            '',
          ].join('\n'),
        },
        'client.rb: local mode, kitchen paths, the environment input, node_path; Ruby strings escaped',
      );
      t.equal(rec.files[nodeFile]?.mode, '600');
      t.equal(
        rec.files[nodeFile]?.content,
        JSON.stringify(
          {
            app_port: 8080,
            app_name: "it's mine",
            features: { cache: true },
            db_secret: 'dbsecret-987',
            api_token: { token: 'tok-555' },
            run_list: ['recipe[app]', 'role[web]'],
          },
          null,
          4,
        ),
        'node JSON: inputs as attributes with their JSON types, no deploy_* inputs, no environment; the run list',
      );

      t.same(readdirSync(nodeDir), [`${fqdn()}.json`], 'the node file is kept after the run, as upstream keeps it');
      t.equal(readFileSync(nodeFile, 'utf8'), rec.files[nodeFile]?.content, 'the node JSON chef-client ran with');
      t.equal(modeOf(nodeFile), '600', 'the node file (which holds the inputs) is readable by its owner only');
      t.equal(readFileSync(clientRb, 'utf8'), rec.files[clientRb]?.content, 'client.rb is kept after the run');
      t.equal(modeOf(clientRb), '600');
      t.same(readdirSync(working).sort(), ['client.rb', 'node'], 'nothing else is left in the working directory');
      t.same(readdirSync(outputs), [], 'the outputs are removed once read');
      t.match(run.stderr, logLine('INFO', `running tool command=chef-client -z --config ${clientRb} -j ${nodeFile}`));
      t.match(run.stderr, logLine('INFO', 'tool exited tool=chef-client exitCode=0'));
      t.notMatch(run.stderr, /\[ERROR\]/, 'no error logged');
      assertNoSecrets(t, run.stderr, 'the log');
    },
  );

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: contract: HEAT_CHEF_CMD, a structured run list, a failing run`, async (t) => {
    const { dir, record, env } = setup(t);
    const bin = path.join(dir, 'bin');
    mkdirSync(bin);
    const chef = path.join(bin, 'cinc-client');
    writeFileSync(
      chef,
      readFileSync(path.join(FAKE_TOOLS, 'chef-client'))
        .toString()
        .replace('./record.mjs', path.join(FAKE_TOOLS, 'record.mjs')),
      { mode: 0o755 },
    );
    const run = await runIn('chef', deployment(['recipe[x]']), {
      env: { ...env, PATH: SYSTEM_PATH, HEAT_CHEF_CMD: chef, FAKE_TOOL_EXIT: '3', FAKE_TOOL_STDERR: 'FATAL: boom' },
    });
    t.same(run.result, { deploy_stdout: '', deploy_stderr: 'FATAL: boom', deploy_status_code: 3 });
    const rec = readRecords(record)[0];
    t.match(JSON.parse(Object.values(rec?.files ?? {})[1]?.content ?? '{}'), { run_list: ['recipe[x]'] });
    t.match(run.stderr, logLine('INFO', 'tool exited tool=cinc-client exitCode=3'));
    t.match(run.stderr, logLine('ERROR', 'chef-client failed exitCode=3'));
  });

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: contract: a config that is not a run list fails before chef runs`, async (t) => {
    const { record, env } = setup(t);
    const notJson = await runIn('chef', deployment('recipe[app]'), { env });
    t.equal(notJson.result.deploy_status_code, 1);
    t.match(notJson.result.deploy_stderr, /^the chef config is not JSON .*run list such as \["recipe\[app\]"\]/);
    const notArray = await runIn('chef', deployment('{"run_list": []}'), { env });
    t.match(notArray.result.deploy_stderr, /must be a JSON array/);
    t.same(readRecords(record), []);
  });

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: contract: the kitchen is cloned with git, then reused and reset for every deployment`, async (t) => {
    const { dir, working, record, env } = setup(t);
    const repo = path.join(dir, 'kitchen-repo');
    mkdirSync(path.join(repo, 'cookbooks/app/recipes'), { recursive: true });
    writeFileSync(path.join(repo, 'cookbooks/app/recipes/default.rb'), 'log "hi"\n');
    const git = (...args: string[]) =>
      execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.invalid', ...args], {
        cwd: repo,
        env: { ...process.env, ...env, PATH: SYSTEM_PATH },
      });
    git('init', '-q');
    git('add', '.');
    git('commit', '-qm', 'kitchen');

    const kitchenPath = path.join(dir, 'my-kitchen');
    const options = { kitchen: repo, kitchen_path: kitchenPath };
    const first = await runIn('chef', deployment('["recipe[app]"]', { options }), { env });
    t.equal(first.result.deploy_status_code, 0, 'cloned and ran', { result: first.result });
    t.ok(existsSync(path.join(kitchenPath, 'cookbooks/app/recipes/default.rb')), 'cloned into kitchen_path');
    const client =
      Object.entries(readRecords(record)[0]?.files ?? {}).find(([f]) => f.endsWith('client.rb'))?.[1]?.content ?? '';
    t.match(client, `cookbook_path '${kitchenPath}/cookbooks'`);

    // A second deployment (upstream: only UPDATE removed the old clone, so this failed on the existing directory).
    writeFileSync(path.join(kitchenPath, 'leftover'), 'x');
    writeFileSync(path.join(kitchenPath, '.git', 'marker'), 'x');
    const second = await runIn('chef', deployment('["recipe[app]"]', { id: 'chef-0002', options }), { env });
    t.equal(second.result.deploy_status_code, 0, 'updated and ran', { result: second.result });
    t.notOk(existsSync(path.join(kitchenPath, 'leftover')), 'the checkout holds what the ref holds, nothing else');
    t.ok(existsSync(path.join(kitchenPath, '.git', 'marker')), 'the same clone, not a fresh one');

    // The default kitchen_path is <working>/kitchen.
    await runIn('chef', deployment('["recipe[app]"]', { id: 'chef-0003', options: { kitchen: repo } }), { env });
    t.ok(existsSync(path.join(working, 'kitchen/cookbooks/app/recipes/default.rb')));

    const bad = await runIn(
      'chef',
      deployment('["recipe[app]"]', { id: 'chef-0004', options: { kitchen: path.join(dir, 'no-repo') } }),
      { env },
    );
    t.not(bad.result.deploy_status_code, 0, 'a failed clone fails the deployment');
    t.match(bad.result.deploy_stderr, /no-repo/, "with git's message");
    t.equal(readRecords(record).length, 3, 'and chef does not run');

    // A kitchen_path with other content is not wiped.
    const other = path.join(dir, 'srv-chef');
    mkdirSync(other);
    writeFileSync(path.join(other, 'precious'), 'keep');
    const refused = await runIn(
      'chef',
      deployment('["recipe[app]"]', { id: 'chef-0005', options: { kitchen: repo, kitchen_path: other } }),
      { env },
    );
    t.equal(refused.result.deploy_status_code, 1);
    t.match(refused.result.deploy_stderr, /is a non-empty directory that is not a git clone: not replacing it/);
    t.equal(readFileSync(path.join(other, 'precious'), 'utf8'), 'keep');
    t.equal(readRecords(record).length, 3);
  });

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: contract: without hostname -f, the node file is named after the host name`, async (t) => {
    const { dir, working, record, env } = setup(t);
    const bin = path.join(dir, 'bin');
    mkdirSync(bin);
    writeFileSync(path.join(bin, 'hostname'), '#!/bin/sh\nexit 1\n', { mode: 0o755 });
    const run = await runIn('chef', deployment('[]'), { env: { ...env, PATH: `${bin}:${env.PATH}` } });
    t.equal(run.result.deploy_status_code, 0, 'upstream crashed here');
    t.equal(readRecords(record)[0]?.argv[4], path.join(working, 'node', `${os.hostname()}.json`));
    t.match(run.stderr, logLine('WARNING', '"hostname -f" failed reason=status 1: '));
    t.match(run.stderr, logLine('WARNING', `node file named after the host name instead hostname=${os.hostname()}`));
  });

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: chef not installed: a failure result naming what to install`, async (t) => {
    const { working, env } = setup(t);
    const run = await runIn('chef', deployment('[]'), { env: { ...env, PATH: SYSTEM_PATH } });
    t.equal(run.code, 0);
    t.equal(run.result.deploy_status_code, 1, 'not an empty success');
    t.match(
      run.result.deploy_stderr,
      /^chef is not installed: the command "chef-client" was not found .*Chef Infra Client or Cinc Client.*HEAT_CHEF_CMD/,
    );
    t.match(
      run.stderr,
      logLine(
        'ERROR',
        'hook failed reason=chef is not installed: the command "chef-client" was not found ' +
          `(PATH=${SYSTEM_PATH}). Install Chef Infra Client or Cinc Client (chef-client); the distributions do not package it. ` +
          "Or set HEAT_CHEF_CMD to the command's path.",
      ),
    );
    const nodeFile = path.join(working, 'node', `${fqdn()}.json`);
    t.same(readdirSync(path.join(working, 'node')), [`${fqdn()}.json`], 'the node file is kept anyway');
    t.same(JSON.parse(readFileSync(nodeFile, 'utf8')), {
      app_port: 8080,
      app_name: "it's mine",
      features: { cache: true },
      db_secret: 'dbsecret-987',
      api_token: { token: 'tok-555' },
      run_list: [],
    });
    t.equal(modeOf(nodeFile), '600', 'the node file (which holds the inputs) is readable by its owner only');
    t.equal(modeOf(path.join(working, 'client.rb')), '600', 'client.rb is kept anyway');
  });

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: git not installed: a failure result saying so`, async (t) => {
    const { dir, record, env } = setup(t);
    const bin = path.join(dir, 'bin');
    mkdirSync(bin);
    symlinkSync(process.execPath, path.join(bin, 'node'));
    // A PATH with node (for the hook and the fake) and the fake chef-client, but no git.
    const run = await runIn('chef', deployment('[]', { options: { kitchen: '/nowhere' } }), {
      env: { ...env, PATH: `${FAKE_TOOLS}:${bin}` },
    });
    t.equal(run.result.deploy_status_code, 1);
    t.match(run.result.deploy_stderr, /^git is not installed .*install the git package/);
    t.same(readRecords(record), []);
  });
