import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { git, makeRepos, SSHD, startGitDaemon, startSshd } from '../../helpers/git-servers.js';
import type { TapTest } from '../../helpers/http-test-server.js';
import { startTestServer } from '../../helpers/http-test-server.js';
import {
  assertNoSecrets,
  DEPLOY_INPUTS,
  FAKE_TOOLS,
  HOOK_MODES,
  hookDirs,
  readRecords,
  SECRET_INPUTS,
  SYSTEM_PATH,
  type ToolRecord,
} from '../hook-process.js';

// The chef hook's cookbook sources end to end, in both ways the agent runs it: real git (git daemon, a real sshd),
// tarballs from a loopback HTTP server, and recording fakes of chef-client, berks and chef (Policyfiles), which
// Debian does not package; the fakes keep what they were given and the test reads client.rb and the node JSON.

function setup(t: TapTest) {
  const dirs = hookDirs(t, 'chef');
  const record = path.join(dirs.dir, 'record.jsonl');
  const env: Record<string, string> = {
    PATH: `${FAKE_TOOLS}:${SYSTEM_PATH}`,
    HOME: dirs.home,
    HEAT_CHEF_WORKING: dirs.working,
    HEAT_CHEF_OUTPUTS: dirs.outputs,
    FAKE_TOOL_RECORD: record,
  };
  return { ...dirs, record, env };
}

const deployment = (
  id: string,
  options: Record<string, unknown>,
  config = '["recipe[app]"]',
  inputs: object[] = [],
) => ({
  id,
  name: 'cfg',
  group: 'chef',
  options,
  inputs: [{ name: 'app_port', value: 8080 }, ...inputs, ...DEPLOY_INPUTS, ...SECRET_INPUTS],
  outputs: [],
  config,
});

/** What the fake chef-client was given: client.rb and the node JSON. */
function chefRun(records: ToolRecord[]): { client: string; node: Record<string, unknown> } {
  const rec = records.find((r) => r.tool === 'chef-client');
  if (!rec) throw new Error('the fake chef-client did not run');
  const files = Object.entries(rec.files);
  return {
    client: files.find(([f]) => f.endsWith('client.rb'))?.[1].content ?? '',
    node: JSON.parse(files.find(([f]) => f.endsWith('.json'))?.[1].content ?? '{}') as Record<string, unknown>,
  };
}

/** Files left in the directory credentials live in during a fetch. */
const credentialsLeft = (working: string) =>
  existsSync(path.join(working, 'credentials'))
    ? readdirSync(path.join(working, 'credentials'), { recursive: true })
    : [];

/** A kitchen with a Berksfile, in a bare repository under base. */
function berksKitchen(dir: string, base: string): void {
  const work = path.join(dir, 'work/berks-kitchen');
  mkdirSync(path.join(work, 'cookbooks/site/recipes'), { recursive: true });
  writeFileSync(path.join(work, 'cookbooks/site/recipes/default.rb'), 'log "site"\n');
  writeFileSync(path.join(work, 'Berksfile'), "source 'https://supermarket.chef.io'\ncookbook 'nginx'\n");
  git(work, 'init', '-q', '-b', 'main');
  git(work, 'add', '.');
  git(work, 'commit', '-qm', 'berks kitchen');
  git(base, 'clone', '-q', '--bare', work, 'berks-kitchen.git');
}

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(
    `${mode}: recording fakes of chef-client and berks: a kitchen at a tag, a one-cookbook repository, a Berksfile kitchen and a checksummed tarball make one cookbook path`,
    async (t) => {
      const { dir, working, record, env } = setup(t);
      const repos = makeRepos(dir);
      berksKitchen(dir, repos.base);
      const daemon = await startGitDaemon(t, repos.base);
      const src = path.join(dir, 'tarball');
      mkdirSync(path.join(src, 'db/recipes'), { recursive: true });
      writeFileSync(path.join(src, 'db/metadata.json'), '{"name": "db", "version": "2.0.0"}');
      const archive = execFileSync('tar', ['-cz', '-C', src, 'db']);
      const server = await startTestServer((_req, res) => {
        res.end(archive);
      });
      t.teardown(() => server.close());

      const options = {
        kitchen: daemon.url('kitchen.git'),
        kitchen_ref: 'v1',
        kitchen_sources: [
          { git: daemon.url('webapp-cookbook.git') },
          { git: daemon.url('berks-kitchen.git'), ref: 'main' },
          { tarball: `${server.url}/db.tar.gz`, sha256: createHash('sha256').update(archive).digest('hex') },
        ],
      };
      const run = await runIn('chef', deployment('chef-src-1', options), { env });
      t.equal(run.result.deploy_status_code, 0, 'fetched, resolved and ran', {
        result: run.result,
        stderr: run.stderr,
      });

      const kitchen = path.join(working, 'kitchen');
      t.equal(readFileSync(path.join(kitchen, 'cookbooks/app/recipes/default.rb'), 'utf8'), 'log "tagged"\n', 'at v1');
      const sources = readdirSync(path.join(working, 'sources')).sort();
      t.match(sources, [/^git-berks-kitchen-/, /^git-webapp-cookbook-/, /^tarball-db-/, /^tarball-db-.*\.sha256$/]);
      const berksSource = path.join(working, 'sources', sources[0] ?? '');
      const records = readRecords(record);
      const berks = records.find((r) => r.tool === 'berks');
      const vendored = path.join(working, 'berks', sources[0] ?? '');
      t.same(
        berks?.argv,
        ['vendor', `${vendored}.partial`],
        'recording fake of berks: berks vendor into a new directory',
      );
      t.equal(berks?.cwd, berksSource, 'run in the kitchen that has the Berksfile');
      t.ok(existsSync(path.join(vendored, 'nginx/metadata.rb')), 'the vendored cookbooks are kept');
      t.ok(
        existsSync(path.join(working, 'cookbooks/webapp/recipes/default.rb')),
        'the one-cookbook repository by its name',
      );
      t.ok(existsSync(path.join(working, 'cookbooks/db/metadata.json')), 'the tarball cookbook by its name');
      t.notOk(existsSync(path.join(working, 'cookbooks/webapp/.git')), 'without its .git');

      const { client, node } = chefRun(records);
      const paths = [
        path.join(kitchen, 'cookbooks'),
        path.join(working, 'cookbooks'),
        path.join(berksSource, 'cookbooks'),
        vendored,
      ];
      t.match(
        client,
        `cookbook_path [${paths.map((p) => `'${p}'`).join(', ')}]\n`,
        'every cookbook directory, in the order of the sources',
      );
      t.match(client, `role_path '${kitchen}/roles'\nenvironment_path '${kitchen}/environments'\n`);
      t.same(node.run_list, ['recipe[app]']);
      t.same(credentialsLeft(working), [], 'no credential left');

      // Again: the clones are reused and the tarball is not downloaded again.
      writeFileSync(path.join(kitchen, '.git', 'marker'), 'x');
      const again = await runIn('chef', deployment('chef-src-2', { ...options, kitchen_ref: 'feature' }), { env });
      t.equal(again.result.deploy_status_code, 0, { result: again.result });
      t.ok(existsSync(path.join(kitchen, '.git', 'marker')), 'the kitchen clone is reused');
      t.equal(readFileSync(path.join(kitchen, 'cookbooks/app/recipes/default.rb'), 'utf8'), 'log "feature"\n');
      t.equal(server.requests.length, 1, 'the checksummed tarball is downloaded once');
      assertNoSecrets(t, run.stderr + again.stderr, 'the log');
    },
  );

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(
    `${mode}: recording fake of berks: a failing Berksfile and a missing berks fail naming the cause`,
    async (t) => {
      const { dir, record, env } = setup(t);
      const repos = makeRepos(dir);
      berksKitchen(dir, repos.base);
      const daemon = await startGitDaemon(t, repos.base);
      const options = { kitchen: daemon.url('berks-kitchen.git') };
      const failing = await runIn('chef', deployment('chef-berks-1', options), {
        env: { ...env, FAKE_BERKS_EXIT: '1', FAKE_BERKS_STDERR: 'Unable to satisfy constraints on package nginx\n' },
      });
      t.equal(failing.result.deploy_status_code, 1);
      t.match(
        failing.result.deploy_stderr,
        /^kitchen: berks vendor failed for the Berksfile in .*\/kitchen \(status 1\):\nUnable to satisfy constraints on package nginx$/,
      );
      t.notOk(
        readRecords(record).some((r) => r.tool === 'chef-client'),
        'chef does not run',
      );

      const missing = await runIn('chef', deployment('chef-berks-2', options), {
        env: { ...env, HEAT_CHEF_BERKS_CMD: path.join(dir, 'no-berks') },
      });
      t.match(
        missing.result.deploy_stderr,
        /^berks is not installed: the command ".*\/no-berks" was not found .*Install Berkshelf.* kitchen has a Berksfile\. Or set HEAT_CHEF_BERKS_CMD/,
      );
    },
  );

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(
    `${mode}: recording fake of chef (Policyfile): chef install, chef export, chef-client in policy mode`,
    async (t) => {
      const { dir, working, record, env } = setup(t);
      const repo = path.join(dir, 'policy-repo');
      mkdirSync(repo);
      writeFileSync(path.join(repo, 'Policyfile.rb'), "name 'web'\nrun_list 'app::default'\n");
      git(repo, 'init', '-q', '-b', 'main');
      git(repo, 'add', '.');
      git(repo, 'commit', '-qm', 'policy');
      const options = { kitchen: repo };
      const inputs = [{ name: 'environment', value: 'prod' }];
      const run = await runIn('chef', deployment('chef-policy-1', options, '[]', inputs), { env });
      t.equal(run.result.deploy_status_code, 0, { result: run.result, stderr: run.stderr });
      const records = readRecords(record);
      const kitchen = path.join(working, 'kitchen');
      const policy = path.join(working, 'policy');
      t.same(
        records.filter((r) => r.tool === 'chef').map((r) => [r.argv, r.cwd]),
        [
          [['install', 'Policyfile.rb'], kitchen],
          [['export', 'Policyfile.rb', `${policy}.partial`], kitchen],
        ],
      );
      const { client, node } = chefRun(records);
      t.match(
        client,
        `local_mode true\nchef_zero.enabled true\nchef_repo_path '${policy}'\nuse_policyfile true\npolicy_document_native_api true\npolicy_name 'web'\npolicy_group 'local'\nnode_path `,
      );
      t.notMatch(client, /cookbook_path|environment '/, 'no cookbook path, no environment');
      t.notOk('run_list' in node, 'chef-client refuses a run list in policy mode');
      t.match(run.stderr, /\[WARNING\] environment input not used: a policy has no environment policy=web/);

      const withRunList = await runIn('chef', deployment('chef-policy-2', options), { env });
      t.match(
        withRunList.result.deploy_stderr,
        /has a Policyfile\.rb, whose run list chef-client runs: the config must be an empty run list/,
      );
      const failing = await runIn('chef', deployment('chef-policy-3', options, '[]'), {
        env: { ...env, FAKE_CHEF_CLI_EXIT: '1', FAKE_CHEF_CLI_STDERR: 'Error: Failed to generate Policyfile.lock\n' },
      });
      t.match(
        failing.result.deploy_stderr,
        /^kitchen: chef install failed for the Policyfile\.rb in .* \(status 1\):\nError: Failed to generate/,
      );
      const missing = await runIn('chef', deployment('chef-policy-4', options, '[]'), {
        env: { ...env, HEAT_CHEF_CLI_CMD: path.join(dir, 'no-chef') },
      });
      t.match(
        missing.result.deploy_stderr,
        /^chef is not installed: .*Install Chef Workstation.*Or set HEAT_CHEF_CLI_CMD/,
      );
    },
  );

const noSshd = existsSync(SSHD) ? false : `no ${SSHD}: install Debian's openssh-server`;
for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(
    `${mode}: a private kitchen over ssh: the key is no attribute, and a wrong key shows nowhere`,
    { skip: noSshd },
    async (t) => {
      const { dir, working, record, env } = setup(t);
      const repos = makeRepos(dir);
      const sshd = await startSshd(t, dir);
      const options = { kitchen: sshd.url(repos.kitchen), kitchen_ref: 'feature' };
      const keyInputs = (key: string) => [
        { name: 'kitchen_ssh_key', value: key },
        { name: 'kitchen_known_hosts', value: sshd.knownHosts },
      ];
      const good = await runIn(
        'chef',
        deployment('chef-ssh-1', options, '["recipe[app]"]', keyInputs(sshd.clientKey)),
        { env },
      );
      t.equal(good.result.deploy_status_code, 0, { result: good.result, stderr: good.stderr });
      const { node } = chefRun(readRecords(record));
      t.notOk('kitchen_ssh_key' in node || 'kitchen_known_hosts' in node, 'the credentials are not node attributes');
      t.equal(node.app_port, 8080);

      const other = path.join(dir, 'other');
      execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', '', '-f', other]);
      const wrongKey = readFileSync(other, 'utf8');
      const bad = await runIn('chef', deployment('chef-ssh-2', options, '["recipe[app]"]', keyInputs(wrongKey)), {
        env,
      });
      t.equal(bad.result.deploy_status_code, 1);
      t.match(bad.result.deploy_stderr, /^kitchen: could not fetch ssh:\/\/.*\n(.|\n)*Permission denied \(publickey\)/);
      const keyLines = [sshd.clientKey, wrongKey].flatMap((k) =>
        k.split('\n').filter((l) => l.length > 20 && !l.startsWith('-----')),
      );
      const hostKey = sshd.knownHosts.split(' ').at(-1)?.trim() ?? '';
      for (const [where, text] of [
        ['the log', good.stderr + bad.stderr],
        ['the results', JSON.stringify(good.result) + JSON.stringify(bad.result)],
      ] as const) {
        t.notOk(
          keyLines.some((l) => text.includes(l)),
          `${where}: no line of either key`,
        );
        t.notOk(text.includes(hostKey), `${where}: no known_hosts entry`);
      }
      t.same(credentialsLeft(working), [], 'no key file left after either run');
    },
  );

t.test('a run stopped during its fetch removes the key; a key a killed run left is removed by the next', async (t) => {
  const { dir, working, env } = setup(t);
  const keyFile = path.join(dir, 'id');
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', '', '-f', keyFile]);
  const key = readFileSync(keyFile, 'utf8');
  // An ssh that never answers, so the fetch is still running when the hook is stopped.
  const bin = path.join(dir, 'bin');
  mkdirSync(bin);
  const connecting = path.join(dir, 'connecting');
  writeFileSync(path.join(bin, 'ssh'), `#!/bin/sh\necho $$ > ${connecting}\nexec sleep 60\n`, { mode: 0o755 });
  let sshPid = 0;
  t.teardown(() => {
    try {
      if (sshPid) process.kill(sshPid, 'SIGKILL');
    } catch {
      // already gone
    }
  });
  const dep = deployment('chef-stop-1', { kitchen: 'ssh://git@127.0.0.1:1/kitchen.git' }, '[]', [
    { name: 'kitchen_ssh_key', value: key },
  ]);
  const keyFiles = () => credentialsLeft(working).filter((f) => String(f).endsWith('key'));
  const waitFor = async (ok: () => boolean) => {
    for (let i = 0; i < 200 && !ok(); i++) await new Promise((r) => setTimeout(r, 50));
    return ok();
  };

  const [first] = HOOK_MODES;
  if (!first) throw new Error('no hook mode');
  const stopped = first.run('chef', dep, {
    env: { ...env, PATH: `${bin}:${env.PATH}` },
    started: (pid) => {
      void waitFor(() => existsSync(connecting) && readFileSync(connecting, 'utf8').endsWith('\n')).then(() => {
        sshPid = Number(readFileSync(connecting, 'utf8'));
        t.equal(keyFiles().length, 1, 'the key is on disk while the fetch runs');
        process.kill(pid, 'SIGTERM');
      });
    },
  });
  const run = await stopped;
  t.equal(run.result.deploy_status_code, 1, 'the stopped fetch fails the deployment', { result: run.result });
  t.same(keyFiles(), [], 'and the key is removed');

  // A run killed outright (SIGKILL) cannot clean up: the next run removes what it left.
  const left = path.join(working, 'credentials', 'fetch-killed');
  mkdirSync(left, { recursive: true });
  writeFileSync(path.join(left, 'key'), key, { mode: 0o600 });
  const next = await first.run('chef', deployment('chef-stop-2', { kitchen: path.join(dir, 'no-repo') }), { env });
  t.equal(next.result.deploy_status_code, 1);
  t.notOk(existsSync(left), 'the key a killed run left is gone');
});

t.test(
  'in-process: a Policyfile with other sources, and a source without a cookbook, fail naming the source',
  async (t) => {
    const { dir, record, env } = setup(t);
    const repo = (name: string, files: Record<string, string>) => {
      const r = path.join(dir, name);
      mkdirSync(r);
      for (const [f, content] of Object.entries(files)) writeFileSync(path.join(r, f), content);
      git(r, 'init', '-q', '-b', 'main');
      git(r, 'add', '.');
      git(r, 'commit', '-qm', name);
      return r;
    };
    const policy = repo('policy', { 'Policyfile.rb': "name 'web'\n" });
    const readme = repo('readme', { 'README.md': 'nothing to cook\n' });
    const inProcess = HOOK_MODES[1];
    if (!inProcess) throw new Error('no in-process mode');

    const mixed = await inProcess.run(
      'chef',
      deployment('chef-bad-1', { kitchen: policy, kitchen_sources: [{ git: readme }] }, '[]'),
      { env },
    );
    t.match(
      mixed.result.deploy_stderr,
      /^a source has a Policyfile\.rb, which names every cookbook of the node: it must be the only source/,
    );
    const empty = await inProcess.run('chef', deployment('chef-bad-2', { kitchen_sources: [{ git: readme }] }), {
      env,
    });
    t.match(
      empty.result.deploy_stderr,
      /^kitchen_sources\[0\]: .*\/readme holds no cookbook: neither metadata\.rb or metadata\.json \(one cookbook\), a cookbooks\/ directory \(a kitchen\), a Berksfile nor a Policyfile\.rb$/,
    );
    t.same(readRecords(record), [], 'neither chef nor chef-client ran');
  },
);
