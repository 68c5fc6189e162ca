import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { syncGitSource } from '../../../src/hooks/chef/git-source.js';
import type { GitSourceSpec } from '../../../src/hooks/chef/source-options.js';
import { makeRepos, SSHD, startSshd, startTokenGitServer } from '../../helpers/git-servers.js';
import type { TapTest } from '../../helpers/http-test-server.js';
import { startTestServer } from '../../helpers/http-test-server.js';
import { hookContext, type TestContext } from './hook-context.js';

// Private repositories: over SSH from a real sshd on a loopback port with its own host key, the key and known_hosts
// given as deployment inputs; over HTTP with a token, from git's own HTTP backend that asks for it. Each secret is
// planted in the inputs and looked for in every output: the log, the failure message, and files left behind.

const noSshd = existsSync(SSHD) ? false : `no ${SSHD}: install Debian's openssh-server`;

const spec = (url: string, dir: string, credentials: GitSourceSpec['credentials']): GitSourceSpec => ({
  kind: 'git',
  label: 'kitchen',
  url,
  credentials,
  dir,
});

/** Every file under dir (the credentials must not outlive the fetch). */
function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.join(e.parentPath, e.name));
}

/** Asserts that no planted secret (nor a line of the key) shows in the text, nor in any file under `working`. */
function assertNoSecret(t: TapTest, secrets: string[], ctx: TestContext, message: string, working: string): void {
  const texts = { log: ctx.logText(), message };
  for (const secret of secrets) {
    const probes = [secret.trim(), ...secret.split('\n').filter((l) => l.length > 20 && !l.startsWith('-----'))];
    for (const [where, text] of Object.entries(texts))
      t.notOk(
        probes.some((p) => text.includes(p)),
        `the ${where} shows no part of the secret`,
      );
    for (const file of filesUnder(working)) {
      if (file.includes(`${path.sep}.git${path.sep}`)) continue;
      t.notOk(
        probes.some((p) => readFileSync(file, 'utf8').includes(p)),
        `${path.relative(working, file)} holds no part of the secret`,
      );
    }
  }
}

t.test(
  'ssh: the key and known_hosts from inputs let git in; written 0600 for the fetch only',
  { skip: noSshd },
  async (t) => {
    const dir = t.testdir();
    const repos = makeRepos(dir);
    const sshd = await startSshd(t, dir);
    const working = path.join(dir, 'working');
    const kitchen = path.join(working, 'kitchen');
    const key = { input: 'kitchen_ssh_key', value: sshd.clientKey.trimEnd() };
    const knownHosts = { input: 'kitchen_known_hosts', value: sshd.knownHosts };
    const ctx = hookContext({ HOME: path.join(dir, 'home') }, [
      { name: key.input, value: key.value },
      { name: knownHosts.input, value: knownHosts.value },
    ]);
    // The key as Heat passes it: the final newline lost (ssh refuses a key without one).
    let seen: { mode: number; dirMode: number } | undefined;
    const spawn = ctx.spawn;
    ctx.spawn = async (run) => {
      const keyFile = run.args?.at(-1);
      if (run.file === 'ssh-keygen' && keyFile)
        seen = {
          mode: Number.parseInt(execFileSync('stat', ['-c', '%a', keyFile], { encoding: 'utf8' }), 8),
          dirMode: Number.parseInt(execFileSync('stat', ['-c', '%a', path.dirname(keyFile)], { encoding: 'utf8' }), 8),
        };
      return spawn(run);
    };
    await syncGitSource(
      ctx,
      spec(sshd.url(repos.kitchen), kitchen, { sshKey: key, knownHosts, tokenUser: 'x' }),
      working,
    );
    t.equal(
      readFileSync(path.join(kitchen, 'cookbooks/app/recipes/default.rb'), 'utf8'),
      'log "main"\n',
      'cloned over ssh',
    );
    t.same(seen, { mode: 0o600, dirMode: 0o700 }, 'the key file is 0600 in a 0700 directory');
    t.notOk(existsSync(path.join(working, 'credentials')) && readdirSync(path.join(working, 'credentials')).length > 0);
    t.same(filesUnder(path.join(working, 'credentials')), [], 'no key or known_hosts file is left');
    t.match(ctx.logText(), /running tool command=git fetch/);
    assertNoSecret(t, [key.value, knownHosts.value], ctx, '', working);
  },
);

t.test(
  'ssh: a wrong key, an unknown host key and a key that is not a key each fail clearly',
  { skip: noSshd },
  async (t) => {
    const dir = t.testdir();
    const repos = makeRepos(dir);
    const sshd = await startSshd(t, dir);
    const working = path.join(dir, 'working');
    const other = path.join(dir, 'other');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', '', '-f', other]);
    const wrongKey = readFileSync(other, 'utf8');
    const wrongHost = `[127.0.0.1]:${sshd.port} ${readFileSync(`${other}.pub`, 'utf8').split(' ').slice(0, 2).join(' ')}\n`;
    const cases = [
      {
        name: 'a key sshd does not accept',
        key: wrongKey,
        hosts: sshd.knownHosts,
        expect:
          /^kitchen: could not fetch ssh:\/\/.* \(git exited with status 128\):\n(.|\n)*Permission denied \(publickey\)/,
      },
      {
        name: 'a host key that is not the server’s',
        key: sshd.clientKey,
        hosts: wrongHost,
        expect: /^kitchen: could not fetch ssh:\/\/.*\n(.|\n)*Host key verification failed/,
      },
      {
        name: 'no known_hosts for the server: never accepted blindly',
        key: sshd.clientKey,
        hosts: undefined,
        expect: /Host key verification failed/,
      },
      {
        name: 'a key that is not a key',
        key: 'not-a-key-but-a-secret-0123456789abcdef',
        hosts: sshd.knownHosts,
        expect:
          /^kitchen: the input kitchen_ssh_key is not an SSH private key that ssh can use \(an OpenSSH or PEM private key without a passphrase\)$/,
      },
    ];
    for (const c of cases) {
      const home = path.join(dir, 'home');
      mkdirSync(home, { recursive: true });
      const key = { input: 'kitchen_ssh_key', value: c.key };
      const knownHosts = c.hosts ? { input: 'kitchen_known_hosts', value: c.hosts } : undefined;
      const ctx = hookContext({ HOME: home }, [
        { name: key.input, value: key.value },
        ...(knownHosts ? [{ name: knownHosts.input, value: knownHosts.value }] : []),
      ]);
      const credentials = { sshKey: key, ...(knownHosts ? { knownHosts } : {}), tokenUser: 'x' };
      const kitchen = path.join(working, 'kitchen');
      const err = await syncGitSource(ctx, spec(sshd.url(repos.kitchen), kitchen, credentials), working).then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      t.match(err?.message, c.expect, c.name);
      t.notOk(existsSync(kitchen), `${c.name}: nothing checked out`);
      t.same(filesUnder(path.join(working, 'credentials')), [], `${c.name}: the key is removed after the failure`);
      assertNoSecret(t, [c.key, ...(c.hosts ? [c.hosts] : [])], ctx, err?.message ?? '', working);
      // ssh reads ~ from the password database, not $HOME.
      const userKnownHosts = path.join(os.userInfo().homedir, '.ssh/known_hosts');
      t.notOk(
        existsSync(userKnownHosts) && readFileSync(userKnownHosts, 'utf8').includes(`[127.0.0.1]:${sshd.port}`),
        `${c.name}: the server's key is not added to the user's known_hosts`,
      );
    }
  },
);

t.test('https token: given to the repository through git, never in a URL, an argument or a message', async (t) => {
  const dir = t.testdir();
  const repos = makeRepos(dir);
  const token = 'tok-SECRET-5f2e9c1a7b';
  const server = await startTokenGitServer(t, repos.base, 'x-access-token', token);
  const working = path.join(dir, 'working');
  const kitchen = path.join(working, 'kitchen');
  const good = { input: 'kitchen_token', value: token };
  const ctx = hookContext({ HOME: path.join(dir, 'home') }, [{ name: good.input, value: good.value }]);
  await syncGitSource(
    ctx,
    spec(server.url('kitchen.git'), kitchen, { token: good, tokenUser: 'x-access-token' }),
    working,
  );
  t.equal(readFileSync(path.join(kitchen, 'cookbooks/app/recipes/default.rb'), 'utf8'), 'log "main"\n');
  t.ok(server.authorizations.includes(`Basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}`));
  assertNoSecret(t, [token], ctx, '', working);
  t.notOk(readFileSync(path.join(kitchen, '.git/config'), 'utf8').includes(token), 'not in the clone configuration');

  const wrong = { input: 'kitchen_token', value: 'tok-WRONG-0a1b2c3d4e' };
  const ctx2 = hookContext({ HOME: path.join(dir, 'home') }, [{ name: wrong.input, value: wrong.value }]);
  const fresh = path.join(working, 'fresh');
  const err = await syncGitSource(
    ctx2,
    spec(server.url('kitchen.git'), fresh, { token: wrong, tokenUser: 'x-access-token' }),
    working,
  ).then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  t.match(
    err?.message,
    /^kitchen: could not fetch http:\/\/127\.0\.0\.1:\d+\/kitchen\.git \(git exited with status 128\):\n(.|\n)*Authentication failed/,
  );
  assertNoSecret(t, [wrong.value], ctx2, err?.message ?? '', working);

  // Without a token, git does not ask anyone (no prompt, no askpass, no helper of the agent's user).
  const ctx3 = hookContext({ HOME: path.join(dir, 'home'), GIT_ASKPASS: '/bin/echo', SSH_ASKPASS: '/bin/echo' });
  const none = await syncGitSource(ctx3, spec(server.url('kitchen.git'), fresh, { tokenUser: 'x' }), working).then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  t.match(none?.message, /could not fetch/);
});

t.test('https token: not offered to another server the repository redirects to', async (t) => {
  const dir = t.testdir();
  const repos = makeRepos(dir);
  const token = 'tok-SECRET-origin-only-91c3';
  const elsewhere = await startTokenGitServer(t, repos.base, 'x-access-token', 'tok-of-elsewhere');
  const redirecting = await startTestServer((req, res) => {
    res.writeHead(302, { location: `${elsewhere.url('')}${(req.url ?? '/').slice(1)}` }).end();
  });
  t.teardown(() => redirecting.close());
  const credentials = { token: { input: 'kitchen_token', value: token }, tokenUser: 'x-access-token' };
  const ctx = hookContext({ HOME: path.join(dir, 'home') }, [{ name: 'kitchen_token', value: token }]);
  const working = path.join(dir, 'working');
  const err = await syncGitSource(
    ctx,
    spec(`${redirecting.url}/kitchen.git`, path.join(working, 'kitchen'), credentials),
    working,
  ).then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  t.ok(err, 'the fetch fails: the other server wants its own credentials');
  t.ok(elsewhere.authorizations.length > 0, 'git followed the redirect');
  t.notOk(
    elsewhere.authorizations.some((a) =>
      Buffer.from(a.replace(/^Basic /, ''), 'base64')
        .toString()
        .includes(token),
    ),
    'the other server never saw the token',
  );
  assertNoSecret(t, [token], ctx, err?.message ?? '', working);
});
