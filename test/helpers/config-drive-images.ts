import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { TapTest } from './http-test-server.js';

// Real config drive images, made as nova makes them (genisoimage -J -r -V config-2 for iso9660; mkfs.vfat -n
// config-2 plus mcopy for vfat), attached to loop devices with losetup (root) and detached in teardown. The device is
// linked under the test's --root as /dev/loopN: the agent maps every device blkid names under its root, so a test
// only ever sees its own drive, even while other tests attach theirs.

export const DRIVE_TOOLS = ['genisoimage', 'mkfs.vfat', 'mcopy', 'bsdtar', 'blkid', 'losetup'] as const;

/** Why config drive tests cannot run here, or undefined when they can. */
export function driveSkipReason(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root (losetup)';
  for (const tool of DRIVE_TOOLS) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) {
      return `${tool} is not installed (Debian: genisoimage dosfstools mtools libarchive-tools util-linux)`;
    }
  }
  const loop = spawnSync('losetup', ['-f'], { encoding: 'utf8' });
  if (loop.status !== 0) return `no free loop device (losetup -f: ${loop.stderr.trim()})`;
  return undefined;
}

export type DriveFiles = Record<string, string>;

function stage(dir: string, files: DriveFiles): string {
  const src = path.join(dir, 'src');
  mkdirSync(src, { recursive: true });
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(path.join(src, path.dirname(name)), { recursive: true });
    writeFileSync(path.join(src, name), content);
  }
  return src;
}

export function makeIso(dir: string, files: DriveFiles, label = 'config-2'): string {
  const image = path.join(dir, 'drive.iso');
  execFileSync('genisoimage', ['-quiet', '-J', '-r', '-V', label, '-o', image, stage(dir, files)]);
  return image;
}

export function makeVfat(dir: string, files: DriveFiles, label = 'config-2'): string {
  const image = path.join(dir, 'drive.img');
  execFileSync('truncate', ['-s', '2M', image]);
  execFileSync('mkfs.vfat', ['-n', label, image], { stdio: 'ignore' });
  const src = stage(dir, files);
  const top = Object.keys(files).map((f) => f.split('/')[0]!);
  const entries = [...new Set(top)].map((e) => path.join(src, e));
  if (entries.length > 0)
    execFileSync('mcopy', ['-s', '-i', image, ...entries, '::/'], { env: { ...process.env, MTOOLS_SKIP_CHECK: '1' } });
  return image;
}

/** Attach `image` to a free loop device (detached in teardown) and link it as <root>/dev/loopN. */
export function attach(t: TapTest, image: string, root: string): string {
  const device = execFileSync('losetup', ['-f', '--show', image], { encoding: 'utf8' }).trim();
  t.teardown(() => {
    spawnSync('losetup', ['-d', device]);
  });
  mkdirSync(path.join(root, 'dev'), { recursive: true });
  symlinkSync(device, path.join(root, device));
  return device;
}

/**
 * A recording fake `mount` and `umount` on PATH (named so in the tests). `mount` appends its arguments to
 * <dir>/calls and either fails as this machine's kernel does (no iso9660 or vfat) or, with `canMount`, stands in for
 * a kernel that can: it copies the drive's files into the mount point with bsdtar or mcopy. `umount` records its
 * arguments and empties the mount point.
 */
export function fakeMountTools(
  dir: string,
  options: { canMount: boolean; onlyTools?: readonly string[] },
): { bin: string; calls: () => string[] } {
  const bin = path.join(dir, 'fake-bin');
  mkdirSync(bin, { recursive: true });
  const calls = path.join(dir, 'calls');
  writeFileSync(calls, '');
  const realPath = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
  const mount = options.canMount
    ? `PATH=${realPath}\necho "mount $*" >> '${calls}'\nbsdtar -xf "$1" -C "$2" 2>/dev/null || MTOOLS_SKIP_CHECK=1 mcopy -s -n -i "$1" '::/*' "$2" 2>/dev/null\n`
    : `echo "mount $*" >> '${calls}'\necho "mount: $2: unknown filesystem type." >&2\nexit 32\n`;
  writeFileSync(path.join(bin, 'mount'), `#!/bin/sh\n${mount}`);
  writeFileSync(
    path.join(bin, 'umount'),
    `#!/bin/sh\nPATH=${realPath}\necho "umount $*" >> '${calls}'\nfind "$2" -mindepth 1 -delete\n`,
  );
  chmodSync(path.join(bin, 'mount'), 0o755);
  chmodSync(path.join(bin, 'umount'), 0o755);
  // With onlyTools, PATH holds nothing else: the named real tools are linked in, every other one is "not installed".
  for (const tool of options.onlyTools ?? []) {
    const real = execFileSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).trim();
    symlinkSync(real, path.join(bin, tool));
  }
  return {
    bin,
    calls: () => readFileSync(calls, 'utf8').split('\n').filter(Boolean),
  };
}
