// Shared measurement for benchmarks: run a command, return wall seconds, peak RSS (KB) and CPU seconds of the
// child, read from GNU time (Debian package `time`) when present, else from getrusage via python3.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';

const GNU_TIME = '/usr/bin/time';

export function measure(argv, options = {}) {
  const started = process.hrtime.bigint();
  let res;
  let rssKb;
  let cpu;
  if (existsSync(GNU_TIME)) {
    res = spawnSync(GNU_TIME, ['-f', '__MEASURE__ %M %U %S', ...argv], { encoding: 'utf8', ...options });
    const m = /__MEASURE__ (\d+) ([\d.]+) ([\d.]+)/.exec(res.stderr ?? '');
    if (m) {
      rssKb = Number(m[1]);
      cpu = Number(m[2]) + Number(m[3]);
    }
  } else {
    const py =
      'import resource,subprocess,sys\nr=subprocess.run(sys.argv[1:])\nu=resource.getrusage(resource.RUSAGE_CHILDREN)\nprint("__MEASURE__",u.ru_maxrss,u.ru_utime,u.ru_stime,file=sys.stderr)\nsys.exit(r.returncode)';
    res = spawnSync('python3', ['-c', py, ...argv], { encoding: 'utf8', ...options });
    const m = /__MEASURE__ (\d+) ([\d.]+) ([\d.]+)/.exec(res.stderr ?? '');
    if (m) {
      rssKb = Number(m[1]);
      cpu = Number(m[2]) + Number(m[3]);
    }
  }
  const wall = Number(process.hrtime.bigint() - started) / 1e9;
  return { wall, rssKb, cpu, status: res.status, stdout: res.stdout, stderr: res.stderr };
}

/**
 * `env` in which a launcher's `#!/usr/bin/env -S node ...` line finds this Node.js first: the benchmarks start our
 * commands through their #! lines, with the node flags an instance's launchers give them.
 */
export function withThisNode(env = process.env) {
  return { ...env, PATH: `${path.dirname(process.execPath)}${path.delimiter}${env.PATH ?? ''}` };
}

export function median(values) {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

function summarise(runs) {
  return {
    wall: median(runs.map((r) => r.wall)),
    rssKb: Math.max(...runs.map((r) => r.rssKb ?? 0)),
    cpu: median(runs.map((r) => r.cpu ?? 0)),
    statuses: [...new Set(runs.map((r) => r.status))],
  };
}

/** Run `fn` `n` times and summarise. */
export function repeat(n, fn) {
  const runs = [];
  for (let i = 0; i < n; i++) runs.push(fn(i));
  return summarise(runs);
}

/**
 * Run each of `fns` `n` times, taking turns (a, b, a, b, ...) so that drift in the machine's speed (other tenants,
 * page-cache reclaim) falls on every side alike; one summary per function.
 */
export function interleave(n, fns) {
  const runs = fns.map(() => []);
  for (let i = 0; i < n; i++) fns.forEach((fn, k) => runs[k].push(fn(i)));
  return runs.map(summarise);
}
