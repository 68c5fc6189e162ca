import path from 'node:path';
import t from 'tap';
import { isSecretInput } from '../../../src/heat/deployment.js';
import { HookFailure, type HookDeployment } from '../../../src/hooks/contract.js';
import { credentialInputs, kitchenOptions } from '../../../src/hooks/chef/source-options.js';

// The chef hook's source options as Heat hands them over: anything a template can put there, checked before anything
// is fetched, a bad value failing with the option named.

const working = '/var/lib/heat-config/heat-config-chef';
const dep = (options: Record<string, unknown>, inputs: Array<{ name: string; value: unknown }> = []) =>
  ({
    id: 'd1',
    name: 'd',
    group: 'chef',
    action: 'CREATE',
    inputs,
    outputs: [],
    document: {},
    config: '[]',
    options,
  }) as unknown as HookDeployment;

t.test('kitchen, kitchen_ref and kitchen_sources', async (t) => {
  const opts = kitchenOptions(
    dep(
      {
        kitchen: 'git@example.invalid:org/kitchen.git',
        kitchen_ref: 'release/1.2',
        kitchen_sources: [
          { git: 'https://example.invalid/org/webapp.git', ref: 'v1', token_input: 'webapp_token', token_user: 'ci' },
          { tarball: 'https://example.invalid/db.tar.gz', sha256: 'A'.repeat(64) },
        ],
      },
      [
        { name: 'kitchen_ssh_key', value: 'KEY' },
        { name: 'kitchen_known_hosts', value: 'HOSTS' },
        { name: 'webapp_token', value: 'TOKEN' },
      ],
    ),
    working,
  );
  t.equal(opts.kitchenPath, path.join(working, 'kitchen'));
  const [main, git, tarball] = opts.sources;
  t.match(main, {
    kind: 'git',
    label: 'kitchen',
    ref: 'release/1.2',
    dir: path.join(working, 'kitchen'),
    credentials: {
      sshKey: { input: 'kitchen_ssh_key', value: 'KEY' },
      knownHosts: { input: 'kitchen_known_hosts', value: 'HOSTS' },
      tokenUser: 'x-access-token',
    },
  });
  t.match(git, {
    kind: 'git',
    label: 'kitchen_sources[0]',
    ref: 'v1',
    credentials: { token: { input: 'webapp_token', value: 'TOKEN' }, tokenUser: 'ci' },
  });
  t.notOk(git?.kind === 'git' && git.credentials.sshKey, 'the default key is for kitchen only');
  t.match(git?.dir, /^\/var\/lib\/heat-config\/heat-config-chef\/sources\/git-webapp-[0-9a-f]{12}$/);
  t.match(tarball, { kind: 'tarball', sha256: 'a'.repeat(64) });
  t.match(tarball?.dir, /\/sources\/tarball-db-[0-9a-f]{12}$/);
  t.same([...credentialInputs(opts.sources)].sort(), ['kitchen_known_hosts', 'kitchen_ssh_key', 'webapp_token']);
  t.same(kitchenOptions(dep({ kitchen_path: 'srv' }), working), {
    kitchenPath: path.join(working, 'srv'),
    sources: [],
  });
});

t.test(
  'the credential inputs are secret by the agent’s one rule (never shown by status, scrubbed from logs)',
  async (t) => {
    for (const name of ['kitchen_ssh_key', 'kitchen_known_hosts', 'kitchen_token', 'deploy_private_key'])
      t.ok(isSecretInput(name), name);
    t.notOk(isSecretInput('key_name'), 'a Nova key pair name is not');
  },
);

t.test('bad options fail naming the option, before anything is fetched', async (t) => {
  const cases: Array<[Record<string, unknown>, RegExp]> = [
    [{ kitchen: 42 }, /^the option kitchen must be a git repository URL/],
    [{ kitchen: '--upload-pack=touch /tmp/x' }, /^the option kitchen is not a git repository URL/],
    [
      { kitchen: 'https://u:pw-123@example.invalid/k.git' },
      /^the option kitchen has a password in its URL: options are not secret/,
    ],
    [
      { kitchen: 'k', kitchen_ref: '--force' },
      /^the option kitchen_ref is not a branch, tag or commit name: "--force"$/,
    ],
    [{ kitchen: 'k', kitchen_ref: 'a:b' }, /is not a branch, tag or commit name/],
    [{ kitchen: 'k', kitchen_ref: 'main..dev' }, /is not a branch, tag or commit name/],
    [{ kitchen: 'k', kitchen_ref: ['v1'] }, /^the option kitchen_ref must be a branch, tag or commit name \(text\)$/],
    [{ kitchen_ref: 'v1' }, /^the option kitchen_ref is given without kitchen/],
    [{ kitchen_sources: 'https://x' }, /^the option kitchen_sources must be a list of sources/],
    [{ kitchen_sources: [1] }, /^kitchen_sources\[0\] must be an object with "git"/],
    [{ kitchen_sources: [{ git: 'a', tarball: 'b' }] }, /^kitchen_sources\[0\] must have exactly one of "git"/],
    [
      { kitchen_sources: [{ tarball: 'https://x/a.tgz', sha265: 'x' }] },
      /^kitchen_sources\[0\] has unknown keys "sha265"; a tarball source takes tarball, sha256$/,
    ],
    [
      { kitchen_sources: [{ tarball: 'ftp://x/a.tgz' }] },
      /^the option kitchen_sources\[0\]\.tarball must be an http or https URL, not ftp:$/,
    ],
    [{ kitchen_sources: [{ tarball: 'not a url' }] }, /^the option kitchen_sources\[0\]\.tarball is not a URL/],
    [
      { kitchen_sources: [{ tarball: 'https://x/a.tgz', sha256: 'abc' }] },
      /sha256 must be a SHA-256 checksum: 64 hexadecimal digits$/,
    ],
    [
      { kitchen_sources: [{ git: 'https://x/a.git', ssh_key_input: 'deploy_ident' }] },
      /^kitchen_sources\[0\]\.ssh_key_input names the input "deploy_ident", which the agent would show and log/,
    ],
    [
      { kitchen_sources: [{ git: 'https://x/a.git', token_input: 'absent_token' }] },
      /names the input "absent_token", which the deployment does not have/,
    ],
    [{ kitchen: 'https://x/a.git', kitchen_sources: [{ git: 'https://x/a.git' }] }, /is listed twice/],
    [
      { kitchen_path: '.' },
      /^the option kitchen_path is \/var\/lib\/heat-config\/heat-config-chef, which the hook's own files use/,
    ],
    [{ kitchen_path: '/' }, /^the option kitchen_path is \/, which the hook's own files use/],
    [
      { kitchen_path: 'sources/mine' },
      /which the hook's own files use: point it at a directory of its own, such as \/var\/lib\/heat-config\/heat-config-chef\/kitchen$/,
    ],
    [{ kitchen_sources: Array.from({ length: 33 }, (_, i) => ({ git: `g${i}` })) }, /lists 33 sources; at most 32/],
  ];
  for (const [options, expected] of cases) {
    const err = (() => {
      try {
        kitchenOptions(dep(options), working);
        return undefined;
      } catch (e) {
        return e;
      }
    })();
    t.type(err, HookFailure, JSON.stringify(options).slice(0, 80));
    t.match((err as Error | undefined)?.message, expected);
    t.notOk((err as Error | undefined)?.message.includes('pw-123'), 'no password in the message');
  }
});

/** A small deterministic generator of JSON values, the shapes a template can produce. */
function randomJson(next: () => number, depth = 0): unknown {
  const pick = Math.floor(next() * (depth > 2 ? 6 : 8));
  const strings = [
    '',
    'v1',
    '-x',
    'https://h/r.git',
    'git://127.0.0.1/x',
    'a:b',
    '\u0000',
    'f'.repeat(64),
    'kitchen_token',
  ];
  switch (pick) {
    case 0:
      return null;
    case 1:
      return next() < 0.5;
    case 2:
      return Math.floor(next() * 1e6) - 5e5;
    case 3:
    case 4:
    case 5:
      return strings[Math.floor(next() * strings.length)];
    case 6:
      return Array.from({ length: Math.floor(next() * 4) }, () => randomJson(next, depth + 1));
    default: {
      const keys = ['git', 'tarball', 'ref', 'sha256', 'token_input', 'ssh_key_input', 'token_user', '__proto__', 'x'];
      const o: Record<string, unknown> = {};
      for (let i = Math.floor(next() * 4); i > 0; i--)
        Object.defineProperty(o, keys[Math.floor(next() * keys.length)] ?? 'x', {
          value: randomJson(next, depth + 1),
          enumerable: true,
          configurable: true,
          writable: true,
        });
      return o;
    }
  }
}

t.test('property: any JSON in the options is accepted or refused with a HookFailure, never a crash', async (t) => {
  let seed = 0x2545f491;
  const next = () => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) / 2 ** 32;
  };
  let refused = 0;
  for (let i = 0; i < 2000; i++) {
    const options = {
      kitchen: randomJson(next),
      kitchen_ref: randomJson(next),
      kitchen_sources: randomJson(next),
      kitchen_token_user: randomJson(next),
    };
    try {
      const opts = kitchenOptions(dep(options, [{ name: 'kitchen_token', value: 't' }]), working);
      for (const s of opts.sources) {
        if (s.kind === 'git' && s.ref !== undefined && (s.ref.startsWith('-') || s.ref.includes(':')))
          t.fail(`a ref git would take as an option or refspec was accepted: ${s.ref}`);
        if (s.url.startsWith('-')) t.fail(`a URL git would take as an option was accepted: ${s.url}`);
      }
    } catch (err) {
      if (!(err instanceof HookFailure)) {
        t.fail(`not a HookFailure for ${JSON.stringify(options)}: ${String(err)}`);
        return;
      }
      refused++;
    }
  }
  t.ok(refused > 100 && refused < 2000, `both accepted and refused options were generated (${refused} refused)`);
});
