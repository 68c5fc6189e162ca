import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Logger } from '../log/logger.js';
import { readJsonFile } from '../util/read-json-file.js';
import type { PathMapper } from '../util/rooted-path.js';
import { ec2FromOpenstack } from './openstack-metadata.js';
import { runTool, type ToolResult } from './run-tool.js';
import { parsePythonJson } from '../util/python-json-parse.js';

// The OpenStack config drive as os-collect-config's ec2 collector reads it (config_drive.py): the first block device
// blkid reports with LABEL=config-2 and TYPE vfat or iso9660; its existing mount from /proc/mounts if it has one,
// otherwise a read-only mount on a fresh temp directory, unmounted (lazily, as upstream) and removed afterwards; the
// file ec2/latest/meta-data.json. Added here: openstack/latest/meta_data.json where the ec2 file is absent, and a
// drive that cannot be mounted (a container, a kernel without iso9660 or vfat) is read without mounting it, with
// libarchive's bsdtar (iso9660) or mtools' mcopy (vfat). Every absolute path (/proc/mounts, the device, the temp
// directory) is mapped under --root: a device blkid names that does not exist under the root is not this root's.

const LABEL = 'config-2';
const FILE_TYPES = ['vfat', 'iso9660'] as const;
export const EC2_FILE = 'ec2/latest/meta-data.json';
export const OPENSTACK_FILE = 'openstack/latest/meta_data.json';

export interface DriveContext {
  readonly paths: PathMapper;
  readonly log: Logger;
  /** Time limit for each tool run. */
  readonly timeoutMs: number;
  /** Largest metadata file accepted, in bytes. */
  readonly maxBytes: number;
  readonly signal?: AbortSignal;
}

export interface BlockDevice {
  readonly devname: string;
  readonly type: string;
  readonly label: string;
}

export type DriveRead =
  | { readonly kind: 'none' }
  | {
      readonly kind: 'data';
      readonly device: string;
      readonly file: string;
      readonly via: 'existing mount' | 'mount' | 'bsdtar' | 'mcopy';
      readonly value: Record<string, unknown>;
    }
  | { readonly kind: 'unusable'; readonly device?: string; readonly reason: string };

/** blkid -o export: devices separated by blank lines, KEY=value lines, spaces escaped as "\ ". */
export function parseBlkidExport(text: string): BlockDevice[] {
  const devices: BlockDevice[] = [];
  for (const block of text.split(/\n[ \t]*\n/)) {
    const fields = new Map<string, string>();
    for (const line of block.split('\n')) {
      const eq = line.indexOf('=');
      if (eq <= 0) continue;
      fields.set(line.slice(0, eq).trim(), line.slice(eq + 1).replace(/\\ /g, ' '));
    }
    const devname = fields.get('DEVNAME');
    if (devname) devices.push({ devname, type: fields.get('TYPE') ?? '', label: fields.get('LABEL') ?? '' });
  }
  return devices;
}

export function isConfigDrive(device: BlockDevice): boolean {
  return device.label === LABEL && (FILE_TYPES as readonly string[]).includes(device.type);
}

/** The mount point of `devname` in /proc/mounts text (octal escapes such as \040 undone), if it is mounted. */
export function findMountPoint(procMounts: string, devname: string): string | undefined {
  for (const line of procMounts.split('\n')) {
    const [source, target] = line.split(/\s+/);
    if (source === devname && target)
      return target.replace(/\\([0-7]{3})/g, (_m, oct: string) => String.fromCharCode(parseInt(oct, 8)));
  }
  return undefined;
}

export async function readConfigDrive(ctx: DriveContext): Promise<DriveRead> {
  const found = await findConfigDrive(ctx);
  if (found.kind !== 'device') return found;
  const { device } = found;
  const shown = device.devname;
  const mapped = ctx.paths.map(device.devname);

  let procMounts = '';
  try {
    procMounts = await fs.readFile(ctx.paths.map('/proc/mounts'), 'utf8');
  } catch (err) {
    ctx.log.debug(
      { reason: (err as NodeJS.ErrnoException).code },
      '/proc/mounts unreadable; the config drive is taken as not mounted',
    );
  }
  const existing = findMountPoint(procMounts, device.devname);
  if (existing !== undefined) {
    ctx.log.debug({ device: shown, mountpoint: existing }, 'config drive already mounted; reading it there');
    return fromDirectory(ctx, shown, ctx.paths.map(existing), 'existing mount');
  }

  const tmpParent = ctx.paths.map(os.tmpdir());
  await fs.mkdir(tmpParent, { recursive: true });
  const mountpoint = await fs.mkdtemp(path.join(tmpParent, 'config-2-'));
  const mounted = await tool(ctx, 'mount', [mapped, mountpoint, '-o', 'ro']);
  if (mounted.ok) {
    try {
      return await fromDirectory(ctx, shown, mountpoint, 'mount');
    } finally {
      // Not abortable: a shutdown while the drive is mounted must still unmount it.
      const unmounted = await tool({ ...ctx, signal: undefined }, 'umount', ['-l', mountpoint]);
      if (unmounted.ok)
        await fs
          .rmdir(mountpoint)
          .catch((err: unknown) =>
            ctx.log.warn(
              { dir: mountpoint, reason: (err as NodeJS.ErrnoException).code },
              'could not remove the config drive mount point',
            ),
          );
      else
        ctx.log.error(
          { device: shown, mountpoint, reason: unmounted.reason },
          'could not unmount the config drive; unmount it by hand',
        );
    }
  }
  await fs.rmdir(mountpoint).catch(() => undefined);
  ctx.log.debug(
    { device: shown, reason: mounted.reason },
    'config drive not mountable here; reading it without mounting',
  );
  const direct = await withoutMount(ctx, device, mapped);
  if (direct.kind === 'unusable' && direct.toolMissing) {
    return { kind: 'unusable', device: shown, reason: `cannot be mounted (${mounted.reason}) and ${direct.reason}` };
  }
  return direct;
}

async function findConfigDrive(ctx: DriveContext): Promise<{ kind: 'device'; device: BlockDevice } | DriveRead> {
  // -t narrows blkid's answer to the label; the TYPE rule is checked here, as upstream checks both. "-c /dev/null"
  // probes the devices instead of trusting blkid's cache, which can still describe a device since replaced.
  const res = await tool(ctx, 'blkid', ['-c', '/dev/null', '-o', 'export', '-t', `LABEL=${LABEL}`]);
  if (!res.ok) {
    // blkid exits 2 when no device matches; a system without blkid has no config drive we could find.
    if (res.exitCode === 2 || res.missing) {
      ctx.log.debug({ reason: res.reason }, 'no config drive');
      return { kind: 'none' };
    }
    return { kind: 'unusable', reason: `looking for a config drive failed: ${res.reason}` };
  }
  for (const device of parseBlkidExport(res.stdout.toString('utf8'))) {
    if (!isConfigDrive(device)) continue;
    try {
      await fs.stat(ctx.paths.map(device.devname));
    } catch {
      ctx.log.debug({ device: device.devname }, 'config drive device not present under the root; ignored');
      continue;
    }
    return { kind: 'device', device };
  }
  return { kind: 'none' };
}

async function fromDirectory(
  ctx: DriveContext,
  device: string,
  dir: string,
  via: 'existing mount' | 'mount',
): Promise<DriveRead> {
  for (const file of [EC2_FILE, OPENSTACK_FILE]) {
    const read = await readJsonFile(path.join(dir, file), ctx.maxBytes);
    if (!read.ok && read.reason === 'missing') continue;
    if (!read.ok) return { kind: 'unusable', device, reason: `${file} on the config drive: ${read.detail}` };
    return usable(device, file, via, read.value);
  }
  return { kind: 'unusable', device, reason: `no ${EC2_FILE} or ${OPENSTACK_FILE} on the config drive` };
}

async function withoutMount(
  ctx: DriveContext,
  device: BlockDevice,
  mapped: string,
): Promise<DriveRead & { toolMissing?: boolean }> {
  const iso = device.type === 'iso9660';
  for (const file of [EC2_FILE, OPENSTACK_FILE]) {
    const res = iso
      ? await tool(ctx, 'bsdtar', ['-x', '-O', '-f', mapped, file])
      : await tool(ctx, 'mcopy', ['-n', '-i', mapped, `::/${file}`, '-'], { MTOOLS_SKIP_CHECK: '1' });
    if (!res.ok) {
      if (res.missing)
        return {
          kind: 'unusable',
          device: device.devname,
          reason: `${iso ? 'bsdtar (Debian: libarchive-tools)' : 'mcopy (Debian: mtools)'} is not installed to read it without mounting`,
          toolMissing: true,
        };
      // Both tools say so in these words when the file is absent from an otherwise readable filesystem.
      if (res.exitCode === 1 && /not found/i.test(res.stderr)) continue;
      return {
        kind: 'unusable',
        device: device.devname,
        reason: `reading ${file} from the config drive failed: ${res.reason}`,
      };
    }
    let value: unknown;
    try {
      value = parsePythonJson(res.stdout.toString('utf8'));
    } catch (err) {
      return {
        kind: 'unusable',
        device: device.devname,
        reason: `${file} on the config drive: ${(err as Error).message}`,
      };
    }
    return usable(device.devname, file, iso ? 'bsdtar' : 'mcopy', value);
  }
  return {
    kind: 'unusable',
    device: device.devname,
    reason: `no readable ${EC2_FILE} or ${OPENSTACK_FILE} on the config drive (missing, or the filesystem is damaged)`,
  };
}

function usable(
  device: string,
  file: string,
  via: 'existing mount' | 'mount' | 'bsdtar' | 'mcopy',
  value: unknown,
): DriveRead {
  // Upstream used the drive only when it gave a non-empty dict; anything else fell through to the metadata service.
  if (typeof value !== 'object' || value === null || Array.isArray(value) || Object.keys(value).length === 0) {
    return { kind: 'unusable', device, reason: `${file} on the config drive holds no metadata object` };
  }
  const doc = value as Record<string, unknown>;
  return { kind: 'data', device, file, via, value: file === OPENSTACK_FILE ? ec2FromOpenstack(doc) : doc };
}

function tool(
  ctx: DriveContext,
  file: string,
  args: readonly string[],
  env?: Record<string, string>,
): Promise<ToolResult> {
  return runTool({
    file,
    args,
    timeoutMs: ctx.timeoutMs,
    maxBytes: ctx.maxBytes,
    ...(env ? { env } : {}),
    ...(ctx.signal ? { signal: ctx.signal } : {}),
  });
}
