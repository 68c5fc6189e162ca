// The README's first command: run the agent's main job once on the bundled example, under ./demo-root, with no
// cloud and no root rights needed. Collects the example metadata, writes the cache, renders templates, runs the
// example deployment with the bundled script hook, and prints what changed.
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve('demo-root');
rmSync(root, { recursive: true, force: true });
cpSync('examples/demo', root, { recursive: true });
// Git does not keep modes: the agent refuses local data that others can write, and the config holds secrets.
chmodSync(path.join(root, 'var/lib/os-collect-config/local-data'), 0o700);
for (const f of readdirSync(path.join(root, 'var/lib/os-collect-config/local-data'))) {
  chmodSync(path.join(root, 'var/lib/os-collect-config/local-data', f), 0o600);
}
chmodSync(path.join(root, 'etc/os-collect-config.conf'), 0o600);
// The built script hook, installed as the heat-config-script element does: the agent recognises its own build and runs
// it in-process.
mkdirSync(path.join(root, 'var/lib/heat-config/hooks'), { recursive: true });
cpSync('dist/hooks/script', path.join(root, 'var/lib/heat-config/hooks/script'));
chmodSync(path.join(root, 'var/lib/heat-config/hooks/script'), 0o755);

const agent = path.resolve('dist/os-config-agent.mjs');
console.log(`$ os-config-agent run --root ${path.relative('.', root)} --one-time`);
const run = spawnSync(process.execPath, [agent, 'run', '--root', root, '--one-time'], { encoding: 'utf8' });
for (const line of run.stdout.split('\n').filter(Boolean)) {
  try {
    const { level, msg, time: _t, name: _n, ...fields } = JSON.parse(line);
    const extra = Object.entries(fields)
      .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
      .join(' ');
    console.log(`  [${level}] ${msg}${extra ? `  ${extra}` : ''}`);
  } catch {
    console.log(`  ${line}`);
  }
}
if (run.stderr.trim()) console.log(run.stderr.replace(/^/gm, '  (stderr) '));

console.log('\nFiles the agent wrote under demo-root:');
const skip = new Set(['examples']);
const listed = [];
const walk = (dir) => {
  for (const name of readdirSync(dir).sort()) {
    const p = path.join(dir, name);
    const rel = path.relative(root, p);
    if (skip.has(rel)) continue;
    const st = statSync(p);
    if (st.isDirectory()) walk(p);
    else if (!existsSync(path.join('examples/demo', rel)) && !rel.startsWith('var/lib/heat-config/hooks')) {
      listed.push(`  ${(st.mode & 0o777).toString(8).padStart(4, '0')}  /${rel}`);
    }
  }
};
walk(root);
console.log(listed.join('\n'));

const status = spawnSync(process.execPath, [agent, 'status', '--root', root], { encoding: 'utf8' });
// status exits 0-3 by the deployments' outcome (docs/status.md); any of them comes with a report.
if (status.status !== null && status.status <= 3 && status.stdout.trim()) {
  console.log('\n$ os-config-agent status');
  console.log(status.stdout.replace(/^/gm, '  '));
}
console.log(`\nagent exit status: ${run.status}`);
process.exitCode = run.status ?? 1;
