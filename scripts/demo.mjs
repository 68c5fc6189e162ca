// The README's first command: run the agent's main job once on the bundled example, under ./demo-root, with no
// cloud and no root rights needed, and show what it did.
//
// The example is what a server booted by Heat holds: cloud-init's boot data (examples/demo/var/lib/heat-cfntools/
// cfn-init-data) names Heat's request transport, and the transport (a Swift TempURL on a real cloud; here a server
// this script runs on 127.0.0.1) serves the server's metadata with its deployments (examples/demo-heat). In one cycle
// the agent configures itself from the boot data, polls the transport, renders the example template from the
// os-apply-config deployment and the local data, and runs the script deployment through the bundled script hook. The
// rendered file is then compared with what the example intends (examples/demo-expected).
import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import http from 'node:http';
import path from 'node:path';

const root = path.resolve('demo-root');
const agent = path.resolve('dist/os-config-agent.mjs');
const RENDERED = 'etc/demo/app.conf';

/** Heat's side: the server's metadata at its TempURL, on loopback. */
async function startTransport(body) {
  const server = http.createServer((req, res) => {
    const ok = req.method === 'GET' && req.url?.startsWith('/v1/AUTH_demo/heat/server-metadata?');
    res.writeHead(ok ? 200 : 404, { 'content-type': 'application/json' });
    res.end(ok ? body() : '{}');
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

/** The agent, run while this process serves the transport (so not spawnSync, which would stop the server). */
function runAgent(argv) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [agent, ...argv], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

function prepareRoot(port) {
  rmSync(root, { recursive: true, force: true });
  cpSync('examples/demo', root, { recursive: true });
  // The boot data names the transport's URL: this run's port.
  const bootData = path.join(root, 'var/lib/heat-cfntools/cfn-init-data');
  writeFileSync(bootData, readFileSync(bootData, 'utf8').replaceAll('DEMO_PORT', String(port)));
  // Git does not keep modes: the agent refuses local data that others can write, and the config holds secrets.
  const local = path.join(root, 'var/lib/os-collect-config/local-data');
  chmodSync(local, 0o700);
  for (const f of readdirSync(local)) chmodSync(path.join(local, f), 0o600);
  chmodSync(bootData, 0o600);
  chmodSync(path.join(root, 'etc/os-collect-config.conf'), 0o600);
  // The built script hook, installed as the heat-config-script element does: the agent recognises its own build and
  // runs it in-process.
  mkdirSync(path.join(root, 'var/lib/heat-config/hooks'), { recursive: true });
  cpSync('dist/hooks/script', path.join(root, 'var/lib/heat-config/hooks/script'));
  chmodSync(path.join(root, 'var/lib/heat-config/hooks/script'), 0o755);
}

/** Files the agent wrote (not in the example, not the hook), with their modes. */
function writtenFiles() {
  const listed = [];
  const walk = (dir) => {
    for (const name of readdirSync(dir).sort()) {
      const p = path.join(dir, name);
      const rel = path.relative(root, p);
      const st = statSync(p);
      if (st.isDirectory()) walk(p);
      else if (!existsSync(path.join('examples/demo', rel)) && !rel.startsWith('var/lib/heat-config/hooks'))
        listed.push(`  ${(st.mode & 0o777).toString(8).padStart(4, '0')}  /${rel}`);
    }
  };
  walk(root);
  return listed.join('\n');
}

let port = 0;
const transport = await startTransport(() =>
  readFileSync('examples/demo-heat/server-metadata.json', 'utf8').replaceAll('DEMO_PORT', String(port)),
);
port = transport.address().port;
let exitCode = 1;
try {
  prepareRoot(port);
  // The agent's own text log ([agent] log_format = text), as a terminal shows it; the journal gets JSON.
  const argv = ['run', '--root', root, '--one-time', '--agent-log-format', 'text'];
  console.log(`$ os-config-agent ${argv.join(' ').replace(root, path.relative('.', root))}`);
  const run = await runAgent(argv);
  console.log(run.stdout.replace(/^/gm, '  ').trimEnd());
  if (run.stderr.trim()) console.log(run.stderr.replace(/^/gm, '  (stderr) ').trimEnd());

  console.log('\nFiles the agent wrote under demo-root:');
  console.log(writtenFiles());

  const status = spawnSync(process.execPath, [agent, 'status', '--root', root], { encoding: 'utf8' });
  // status exits 0-3 by the deployments' outcome (docs/status.md); any of them comes with a report.
  if (status.status !== null && status.status <= 3 && status.stdout.trim()) {
    console.log('\n$ os-config-agent status');
    console.log(status.stdout.replace(/^/gm, '  ').trimEnd());
  }

  const intended = readFileSync(path.join('examples/demo-expected', RENDERED), 'utf8');
  const rendered = existsSync(path.join(root, RENDERED)) ? readFileSync(path.join(root, RENDERED), 'utf8') : '';
  const asIntended = rendered === intended;
  console.log(
    asIntended
      ? `\n/${RENDERED} is what the example intends (examples/demo-expected/${RENDERED}):`
      : `\n/${RENDERED} is NOT what the example intends (examples/demo-expected/${RENDERED}); it holds:`,
  );
  console.log(rendered.replace(/^/gm, '  ').trimEnd());
  console.log(`\nagent exit status: ${run.status}`);
  exitCode = run.status === 0 && asIntended ? 0 : 1;
} finally {
  transport.close();
}
process.exitCode = exitCode;
