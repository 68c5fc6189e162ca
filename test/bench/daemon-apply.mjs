// The apply step as `os-config-agent run` performs it: in-process, at configure.d/20-os-apply-config of the native
// pipeline, in a daemon that is already running (as production runs it: V8 lite mode on). Upstream's chain runs a new
// os-apply-config process at that position for every change, which is what the one-shot measurements time.
//
// A daemon is started on a root whose `local` source holds the metadata; each metadata change (written atomically) is
// one cycle, and the step's own duration comes from the daemon's `script finished` log line. The first cycle renders
// into an empty output tree with a cold process; every later cycle changes every scalar, so every file is rewritten.
import { spawn } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';

const STEP = '20-os-apply-config';
const CYCLE_TIMEOUT_MS = 120_000;

/**
 * Runs `cycles` applies of `templatesDir` in one daemon under `root`; `metadataFor(i)` is cycle i's metadata and
 * `settle()` runs (untimed) before each change. Resolves with each cycle's step seconds and the daemon's peak RSS.
 */
export async function daemonApplies({ bundle, root, templatesDir, cycles, metadataFor, settle, env }) {
  const local = path.join(root, 'local');
  mkdirSync(path.join(root, 'etc'), { recursive: true });
  mkdirSync(local, { recursive: true, mode: 0o700 });
  chmodSync(local, 0o700);
  // Paths in the config are instance paths, mapped under --root: the tree is copied to the image's place in the root.
  cpSync(templatesDir, path.join(root, 'usr/libexec/os-apply-config/templates'), { recursive: true });
  writeFileSync(
    path.join(root, 'etc/os-collect-config.conf'),
    `[DEFAULT]\ncollectors = local\ncommand = true\nmin_polling_interval = 1\npolling_interval = 3600\n[local]\npath = /local\n` +
      `[apply]\noutput = /out\n[agent]\nnative_pipeline = true\npoll_jitter = 0\n`,
    { mode: 0o600 },
  );
  const publish = (i) => {
    const file = path.join(local, 'metadata.json');
    writeFileSync(`${file}.tmp`, JSON.stringify(metadataFor(i)), { mode: 0o600 });
    renameSync(`${file}.tmp`, file);
  };
  settle();
  publish(0);
  // Started as an instance's unit starts the daemon: node with V8's flags on its command line (docs/build.md).
  const child = spawn(
    process.execPath,
    ['--lite-mode', '--v8-pool-size=0', bundle, 'run', '--root', root, '--config-file', '/etc/os-collect-config.conf'],
    { env, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const seconds = [];
  let waiting;
  createInterface({ input: child.stdout }).on('line', (line) => {
    let entry;
    try {
      entry = JSON.parse(line);
    } catch {
      return;
    }
    if (entry.msg === 'script finished' && entry.script === STEP) {
      if (entry.exitCode !== 0) waiting?.reject(new Error(`the daemon's apply step failed (cycle ${seconds.length})`));
      seconds.push(entry.seconds);
      waiting?.resolve();
    } else if (entry.msg === 'templates applied' && entry.written === 0) {
      waiting?.reject(
        new Error(
          `the daemon's apply step wrote nothing (cycle ${seconds.length}): the bench is not measuring an apply`,
        ),
      );
    }
  });
  const nextApply = () =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no apply within ${CYCLE_TIMEOUT_MS} ms`)), CYCLE_TIMEOUT_MS);
      waiting = {
        resolve: () => (clearTimeout(timer), resolve()),
        reject: (err) => (clearTimeout(timer), reject(err)),
      };
    });
  let peakRssKb;
  try {
    await nextApply();
    for (let i = 1; i < cycles; i++) {
      settle();
      const applied = nextApply();
      publish(i);
      await applied;
    }
    peakRssKb = Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1]);
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
  return { seconds, peakRssKb };
}
