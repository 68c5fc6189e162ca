import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { REPO, requireBundle } from '../helpers/bundle.js';
import { makeAgentRoot } from '../helpers/agent-root.js';

// With the native pipeline off and `command = os-refresh-config`, the agent is upstream's chain: the command runs the
// phase scripts, and an image's configure.d/20-os-apply-config runs os-apply-config on OS_CONFIG_FILES. The same
// instance tree is driven once with this project's compatibility commands and once with Debian's Python tools; the
// files written, the order the scripts ran in and what they saw must be the same.

const DEBIAN = { refresh: '/usr/bin/os-refresh-config', apply: '/usr/bin/os-apply-config' };
const haveDebian =
  existsSync(DEBIAN.refresh) &&
  existsSync(DEBIAN.apply) &&
  spawnSync('/usr/bin/python3', ['-c', 'import os_refresh_config, psutil']).status === 0;

function bin(dir: string, name: string, target: string[]): string {
  const file = path.join(dir, name);
  // Launchers that drop tap's loader hooks (NODE_OPTIONS) before starting the bundle.
  writeFileSync(file, `#!/bin/sh\nexec env -u NODE_OPTIONS ${target.map((a) => `'${a}'`).join(' ')} "$@"\n`);
  chmodSync(file, 0o755);
  return file;
}

function instance(dir: string, tools: { refresh: string[]; apply: string[] }) {
  const bins = path.join(dir, 'bin');
  mkdirSync(bins, { recursive: true });
  const refresh = bin(bins, 'os-refresh-config', tools.refresh);
  bin(bins, 'os-apply-config', tools.apply);
  const root = path.join(dir, 'root');
  const base = path.join(dir, 'phases');
  const templates = path.join(dir, 'templates');
  const out = path.join(dir, 'out');
  const trace = path.join(dir, 'trace.txt');
  mkdirSync(out, { recursive: true });
  const script = (rel: string, body: string) => {
    const file = path.join(base, rel);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, `#!/bin/bash\nset -eu\n${body}\n`);
    chmodSync(file, 0o755);
  };
  script('environment.d/10-site', 'export SITE_NAME=demo');
  script('pre-configure.d/10-first', `echo "pre $SITE_NAME" >> ${trace}`);
  script(
    'configure.d/10-before',
    `echo "before files=$(echo "$OS_CONFIG_FILES" | tr ':' '\\n' | xargs -n1 basename | tr '\\n' ' ')" >> ${trace}`,
  );
  script('configure.d/20-os-apply-config', `os-apply-config -t ${templates} -o ${out}\necho apply >> ${trace}`);
  script('configure.d/30-after', `echo "after $(cat ${out}/etc/app.conf | tr '\\n' ' ')" >> ${trace}`);
  script('post-configure.d/10-last', `echo post >> ${trace}`);
  mkdirSync(path.join(templates, 'etc'), { recursive: true });
  writeFileSync(
    path.join(templates, 'etc/app.conf'),
    'port={{app.port}}\nname={{app.name}}\n{{#app.hosts}}host={{.}}\n{{/app.hosts}}',
  );
  writeFileSync(path.join(templates, 'etc/app.conf.oac'), 'mode: 0640\n');
  const agent = makeAgentRoot(
    root,
    [
      '[DEFAULT]',
      'collectors = local',
      `command = ${refresh} --lockfile ${path.join(dir, 'refresh.lock')}`,
      '[agent]',
      'native_pipeline = false',
      'watch = false',
      '',
    ].join('\n'),
  );
  agent.writeLocal('10-app', { app: { port: 8080, hosts: ['a', 'b'] } });
  agent.writeLocal('20-name', { app: { name: 'web' } });
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: `${bins}:${process.env.PATH ?? ''}`,
    OS_REFRESH_CONFIG_BASE_DIR: base,
  };
  delete env.NODE_OPTIONS;
  delete env.OS_CONFIG_FILES;
  const run = spawnSync(process.execPath, [requireBundle(), 'run', '--one-time', '--root', root], {
    env,
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { run, trace, out };
}

t.test(
  "native pipeline off + command = os-refresh-config: the upstream chain, with our commands and with Debian's",
  { skip: haveDebian ? false : 'Debian os-refresh-config / os-apply-config are not installed' },
  async (t) => {
    const ours = instance(t.testdir(), {
      refresh: [process.execPath, path.join(REPO, 'dist/bin/os-refresh-config')],
      apply: [process.execPath, path.join(REPO, 'dist/bin/os-apply-config')],
    });
    t.equal(ours.run.status, 0, 'agent with our commands', { stderr: ours.run.stderr });
    // As root, Debian's os-apply-config appends to /var/log/os-apply-config.log: give it a private, scratch /var/log.
    const isolate = process.getuid?.() === 0 && spawnSync('unshare', ['-m', 'true']).status === 0;
    const wrap = (cmd: string) =>
      isolate
        ? ['/usr/bin/unshare', '-m', '/bin/sh', '-c', 'mount -t tmpfs none /var/log && exec "$0" "$@"', cmd]
        : [cmd];
    const theirs = instance(t.testdir(), { refresh: [DEBIAN.refresh], apply: wrap(DEBIAN.apply) });
    t.equal(theirs.run.status, 0, "agent with Debian's commands", { stderr: theirs.run.stderr });

    const expected = [
      'pre demo',
      'before files=10-app.json 20-name.json ',
      'apply',
      'after port=8080 name=web host=a host=b ',
      'post',
    ];
    t.same(
      readFileSync(ours.trace, 'utf8').trim().split('\n'),
      expected,
      'our chain: phases in order, environment.d, OS_CONFIG_FILES, the rendered file',
    );
    t.same(readFileSync(theirs.trace, 'utf8').trim().split('\n'), expected, "Debian's chain does the same");
    for (const side of [ours, theirs]) {
      const file = path.join(side.out, 'etc/app.conf');
      t.equal(readFileSync(file, 'utf8'), 'port=8080\nname=web\nhost=a\nhost=b\n');
    }
    const mode = (f: string) => spawnSync('stat', ['-c', '%a', f], { encoding: 'utf8' }).stdout.trim();
    t.equal(
      mode(path.join(ours.out, 'etc/app.conf')),
      mode(path.join(theirs.out, 'etc/app.conf')),
      'same mode from the .oac file',
    );
  },
);
