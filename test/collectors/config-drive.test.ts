import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { MetadataCache } from '../../src/cache/metadata-cache.js';
import { findMountPoint, isConfigDrive, parseBlkidExport } from '../../src/collectors/config-drive.js';
import { ec2Collector } from '../../src/collectors/ec2.js';
import { ec2FromOpenstack } from '../../src/collectors/openstack-metadata.js';
import { loadConfig, type CliOverrides } from '../../src/config/load.js';
import { collectAll, type CollectorMemories } from '../../src/daemon/collect-all.js';
import {
  attach,
  driveSkipReason,
  fakeMountTools,
  makeIso,
  makeVfat,
  type DriveFiles,
} from '../helpers/config-drive-images.js';
import { startEc2Server } from '../helpers/ec2-server.js';
import { collectorContext, refusedUrl, type TapTest } from '../helpers/http-test-server.js';

// The ec2 collector's config drive: real iso9660 and vfat images (genisoimage, mkfs.vfat + mcopy) on loop devices,
// found by the real blkid and read without mounting by the real bsdtar and mcopy (this machine's kernel mounts
// neither). The mount path runs against a recording fake mount/umount on PATH.

const EC2_DOC = {
  'instance-id': 'i-00000042',
  hostname: 'drive-host.novalocal',
  placement: { 'availability-zone': 'az1' },
  'public-keys': { '0': { 'openssh-key': 'ssh-ed25519 AAAA drive' } },
};
const OPENSTACK_DOC = {
  uuid: '8d1a7a0e-1b7c-4a36-9d5b-0a4d1e1c0f11',
  name: 'drive-host',
  hostname: 'drive-host.novalocal',
  availability_zone: 'az1',
  launch_index: 0,
  public_keys: { mykey: 'ssh-ed25519 AAAA os' },
  meta: { role: 'db' },
  random_seed: 'c2VlZA==',
};
const EC2_FILE = 'ec2/latest/meta-data.json';
const OPENSTACK_FILE = 'openstack/latest/meta_data.json';

t.test(
  'parseBlkidExport and isConfigDrive: upstream rules (label config-2, vfat or iso9660; "\\ " is a space)',
  async (t) => {
    const text =
      'DEVNAME=/dev/sr0\nLABEL=config-2\nTYPE=iso9660\n\nDEVNAME=/dev/vdb\nLABEL=config-2\nTYPE=ext4\n\nDEVNAME=/dev/vdc\nLABEL=my\\ disk\nTYPE=vfat\n';
    const devices = parseBlkidExport(text);
    t.same(devices, [
      { devname: '/dev/sr0', label: 'config-2', type: 'iso9660' },
      { devname: '/dev/vdb', label: 'config-2', type: 'ext4' },
      { devname: '/dev/vdc', label: 'my disk', type: 'vfat' },
    ]);
    t.same(devices.map(isConfigDrive), [true, false, false]);
    t.same(parseBlkidExport(''), []);
  },
);

t.test('findMountPoint: first field of a /proc/mounts line; octal escapes undone', async (t) => {
  const mounts = 'proc /proc proc rw 0 0\n/dev/sr0 /media/config\\0402 iso9660 ro 0 0\n';
  t.equal(findMountPoint(mounts, '/dev/sr0'), '/media/config 2');
  t.equal(findMountPoint(mounts, '/dev/sr1'), undefined);
});

t.test('ec2FromOpenstack: EC2 names for the shared keys, the rest kept, random_seed dropped', async (t) => {
  t.same(ec2FromOpenstack(OPENSTACK_DOC), {
    'instance-id': OPENSTACK_DOC.uuid,
    hostname: 'drive-host.novalocal',
    'local-hostname': 'drive-host.novalocal',
    placement: { 'availability-zone': 'az1' },
    'ami-launch-index': '0',
    'public-keys': { '0': { 'openssh-key': 'ssh-ed25519 AAAA os' } },
    uuid: OPENSTACK_DOC.uuid,
    name: 'drive-host',
    availability_zone: 'az1',
    launch_index: 0,
    public_keys: { mykey: 'ssh-ed25519 AAAA os' },
    meta: { role: 'db' },
  });
  const odd = JSON.parse('{"__proto__": {"x": 1}, "uuid": 5}') as Record<string, unknown>;
  const mapped = ec2FromOpenstack(odd);
  t.equal(Object.getPrototypeOf(mapped), Object.prototype, '"__proto__" stays data');
  t.equal(mapped['instance-id'], '5');
});

const skip = driveSkipReason();

interface DriveSetup {
  root: string;
  device: string;
  calls: () => string[];
  cli: CliOverrides;
}

/** A root with `files` on an attached drive, the fake mount tools on PATH, and no reachable metadata service. */
async function driveSetup(
  t: TapTest,
  kind: 'iso' | 'vfat',
  files: DriveFiles,
  options: { canMount?: boolean; onlyTools?: readonly string[]; image?: (img: string) => void } = {},
): Promise<DriveSetup> {
  const root = t.testdir();
  const work = path.join(root, 'work');
  mkdirSync(work);
  const image = kind === 'iso' ? makeIso(work, files) : makeVfat(work, files);
  options.image?.(image);
  const device = attach(t, image, root);
  const fake = fakeMountTools(work, {
    canMount: options.canMount ?? false,
    ...(options.onlyTools ? { onlyTools: options.onlyTools } : {}),
  });
  const savedPath = process.env.PATH;
  process.env.PATH = options.onlyTools ? fake.bin : `${fake.bin}:${savedPath}`;
  t.teardown(() => {
    process.env.PATH = savedPath;
  });
  const cli: CliOverrides = { ec2: { metadata_url: `${await refusedUrl()}/latest/meta-data`, timeout: 10 } };
  return { root, device, calls: fake.calls, cli };
}

function leftovers(root: string): string[] {
  const tmp = path.join(root, 'tmp');
  return existsSync(tmp) ? readdirSync(tmp) : [];
}

t.test('config drive on loop devices (real blkid, bsdtar, mcopy)', { skip: skip ?? false }, async (t) => {
  t.test('iso9660 that cannot be mounted: mount tried read-only on a temp dir, then read with bsdtar', async (t) => {
    const s = await driveSetup(t, 'iso', {
      [EC2_FILE]: JSON.stringify(EC2_DOC),
      [OPENSTACK_FILE]: JSON.stringify(OPENSTACK_DOC),
    });
    const tc = await collectorContext('ec2', { root: s.root, cli: s.cli });
    const result = await ec2Collector.collect(tc.ctx);
    t.same(result.pairs, [{ key: 'ec2', value: EC2_DOC }], 'the ec2 file wins over the OpenStack one');
    const calls = s.calls();
    t.equal(calls.length, 1);
    t.match(calls[0], new RegExp(`^mount ${s.root}${s.device} ${s.root}/tmp/config-2-\\S+ -o ro$`));
    t.same(leftovers(s.root), [], 'the temp mount point is removed');
    t.ok(
      tc.captured.lines.some(
        (l) => l.msg === 'ec2 metadata read from the config drive' && l.via === 'bsdtar' && l.device === s.device,
      ),
    );
  });

  t.test('vfat that cannot be mounted: read with mcopy', async (t) => {
    const s = await driveSetup(t, 'vfat', { [EC2_FILE]: JSON.stringify(EC2_DOC) });
    const tc = await collectorContext('ec2', { root: s.root, cli: s.cli });
    t.same((await ec2Collector.collect(tc.ctx)).pairs, [{ key: 'ec2', value: EC2_DOC }]);
    t.ok(tc.captured.lines.some((l) => l.msg === 'ec2 metadata read from the config drive' && l.via === 'mcopy'));
    t.same(leftovers(s.root), []);
  });

  t.test('no ec2 file: openstack/latest/meta_data.json, keys mapped', async (t) => {
    for (const kind of ['iso', 'vfat'] as const) {
      const s = await driveSetup(t, kind, { [OPENSTACK_FILE]: JSON.stringify(OPENSTACK_DOC) });
      const tc = await collectorContext('ec2', { root: s.root, cli: s.cli });
      t.same((await ec2Collector.collect(tc.ctx)).pairs[0]?.value, ec2FromOpenstack(OPENSTACK_DOC), kind);
    }
  });

  t.test(
    'a drive the kernel can mount (recording fake mount): mounted read-only, read, unmounted lazily, dir removed',
    async (t) => {
      const s = await driveSetup(t, 'iso', { [EC2_FILE]: JSON.stringify(EC2_DOC) }, { canMount: true });
      const tc = await collectorContext('ec2', { root: s.root, cli: s.cli });
      t.same((await ec2Collector.collect(tc.ctx)).pairs[0]?.value, EC2_DOC);
      const [mount, umount, ...rest] = s.calls();
      const dir = /^mount \S+ (\S+) -o ro$/.exec(mount ?? '')?.[1];
      t.ok(dir, `mount called: ${mount}`);
      t.equal(umount, `umount -l ${dir}`);
      t.same(rest, []);
      t.notOk(existsSync(dir!), 'mount point removed');
      t.ok(tc.captured.lines.some((l) => l.msg === 'ec2 metadata read from the config drive' && l.via === 'mount'));
    },
  );

  t.test('an existing mount (from /proc/mounts) is used: nothing mounted', async (t) => {
    const s = await driveSetup(t, 'iso', { [EC2_FILE]: JSON.stringify(EC2_DOC) });
    const mounted = path.join(s.root, 'media/config 2/ec2/latest');
    mkdirSync(mounted, { recursive: true });
    writeFileSync(path.join(mounted, 'meta-data.json'), JSON.stringify({ 'instance-id': 'from-the-mount' }));
    mkdirSync(path.join(s.root, 'proc'));
    writeFileSync(
      path.join(s.root, 'proc/mounts'),
      `sysfs /sys sysfs rw 0 0\n${s.device} /media/config\\0402 iso9660 ro,relatime 0 0\n`,
    );
    const tc = await collectorContext('ec2', { root: s.root, cli: s.cli });
    t.same((await ec2Collector.collect(tc.ctx)).pairs[0]?.value, { 'instance-id': 'from-the-mount' });
    t.same(s.calls(), [], 'no mount, no umount');
  });

  t.test('the drive comes before the metadata service, and is cached like it', async (t) => {
    const s = await driveSetup(t, 'vfat', { [EC2_FILE]: JSON.stringify(EC2_DOC) });
    const server = await startEc2Server();
    t.teardown(() => server.close());
    const loaded = await loadConfig({
      root: s.root,
      configFiles: [],
      cli: { DEFAULT: { collectors: ['ec2'] }, ec2: { metadata_url: server.metadataUrl } },
    });
    const tc = await collectorContext('ec2', { root: s.root, cli: s.cli });
    const cache = new MetadataCache(loaded.config.DEFAULT.cachedir, tc.ctx.log);
    const deps = {
      config: loaded.config,
      paths: loaded.paths,
      log: tc.ctx.log,
      http: tc.http,
      signal: new AbortController().signal,
      memory: new Map(),
      failing: new Set<string>(),
    };
    const first = await collectAll(deps, cache);
    t.same(first.pairs, [{ key: 'ec2', value: EC2_DOC }]);
    t.same(JSON.parse(readFileSync(path.join(loaded.config.DEFAULT.cachedir, 'ec2.json'), 'utf8')), EC2_DOC);
    const mountsAfterFirst = s.calls().length;
    const second = await collectAll(deps, cache);
    t.same(second.pairs, first.pairs);
    t.equal(server.requests.length, 0, 'the metadata service was never asked');
    t.equal(s.calls().length, mountsAfterFirst, 'the cached copy is used: the drive is not read again');
  });

  t.test('a drive whose data is unusable falls through to the metadata service, with a warning', async (t) => {
    const s = await driveSetup(t, 'iso', { [EC2_FILE]: '{not json' });
    const server = await startEc2Server({ tree: { 'instance-id': 'i-svc' } });
    t.teardown(() => server.close());
    const tc = await collectorContext('ec2', { root: s.root, cli: { ec2: { metadata_url: server.metadataUrl } } });
    t.same((await ec2Collector.collect(tc.ctx)).pairs[0]?.value, { 'instance-id': 'i-svc' });
    const warn = tc.captured.lines.filter(
      (l) => l.msg === 'config drive unusable; ec2 metadata read from the metadata service',
    );
    t.equal(warn.length, 1);
    t.match(warn[0]?.reason, /meta-data\.json on the config drive: .*JSON/);
  });

  // Every bad drive, with every metadata URL failing too: one "source unavailable" line naming both, the last good
  // data kept, nothing left mounted, and the next pass runs normally.
  // Damage that leaves what blkid reads intact (so the drive is still found): the iso9660 directory extents after the
  // volume descriptors, the vfat root directory after the FATs.
  const corruptIso = (image: string): void => {
    const buf = readFileSync(image);
    buf.fill(0xff, 36 * 1024);
    writeFileSync(image, buf);
  };
  const corruptVfat = (image: string): void => {
    const buf = readFileSync(image);
    const rootDir = (buf.readUInt16LE(14) + buf[16]! * buf.readUInt16LE(22)) * 512;
    buf.fill(0, rootDir + 32, rootDir + buf.readUInt16LE(17) * 32);
    writeFileSync(image, buf);
  };
  const damaged =
    /no readable ec2\/latest\/meta-data\.json or openstack\/latest\/meta_data\.json on the config drive \(missing, or the filesystem is damaged\)/;
  const badDrives: {
    name: string;
    kind: 'iso' | 'vfat';
    files: DriveFiles;
    canMount?: boolean;
    onlyTools?: readonly string[];
    image?: (img: string) => void;
    reason: RegExp;
  }[] = [
    {
      name: 'corrupt iso9660',
      kind: 'iso',
      files: { [EC2_FILE]: JSON.stringify(EC2_DOC) },
      image: corruptIso,
      reason: damaged,
    },
    {
      name: 'corrupt vfat',
      kind: 'vfat',
      files: { [EC2_FILE]: JSON.stringify(EC2_DOC) },
      image: corruptVfat,
      reason: damaged,
    },
    { name: 'no metadata file', kind: 'iso', files: { 'openstack/latest/user_data': 'x' }, reason: damaged },
    {
      name: 'no metadata file (mounted)',
      kind: 'vfat',
      files: { 'openstack/latest/user_data': 'x' },
      canMount: true,
      reason: /no ec2\/latest\/meta-data\.json or openstack\/latest\/meta_data\.json on the config drive/,
    },
    {
      name: 'invalid JSON (vfat)',
      kind: 'vfat',
      files: { [EC2_FILE]: '{"a": ' },
      reason: /meta-data\.json on the config drive: .*JSON/,
    },
    {
      name: 'invalid JSON (mounted)',
      kind: 'iso',
      files: { [EC2_FILE]: '[1, 2' },
      canMount: true,
      reason: /meta-data\.json on the config drive: .*JSON/,
    },
    { name: 'not a metadata object', kind: 'iso', files: { [EC2_FILE]: '[1, 2]' }, reason: /holds no metadata object/ },
    {
      name: 'neither mountable nor readable (no bsdtar)',
      kind: 'iso',
      files: { [EC2_FILE]: JSON.stringify(EC2_DOC) },
      onlyTools: ['blkid'],
      reason:
        /cannot be mounted \(mount exited with status 32.*\) and bsdtar \(Debian: libarchive-tools\) is not installed/,
    },
  ];
  for (const bad of badDrives) {
    t.test(`bad drive: ${bad.name}`, async (t) => {
      const s = await driveSetup(t, bad.kind, bad.files, {
        ...(bad.canMount ? { canMount: true } : {}),
        ...(bad.onlyTools ? { onlyTools: bad.onlyTools } : {}),
        ...(bad.image ? { image: bad.image } : {}),
      });
      const loaded = await loadConfig({
        root: s.root,
        configFiles: [],
        cli: { ...s.cli, DEFAULT: { collectors: ['ec2'] } },
      });
      const tc = await collectorContext('ec2', { root: s.root, cli: s.cli });
      const memory: CollectorMemories = new Map();
      const deps = {
        config: loaded.config,
        paths: loaded.paths,
        log: tc.ctx.log,
        http: tc.http,
        signal: new AbortController().signal,
        memory,
        failing: new Set<string>(),
      };
      // The last good data: an earlier pass that read a working service (same memory, as in the daemon).
      const server = await startEc2Server({ tree: { 'instance-id': 'i-last-good' } });
      const good = await collectAll(
        { ...deps, config: { ...loaded.config, ec2: { ...loaded.config.ec2, metadata_url: server.metadataUrl } } },
        undefined,
      );
      await server.close();
      // That pass saw the drive as well and fell through to the service; only the failing pass is checked below.
      const before = tc.captured.lines.length;
      const callsBefore = s.calls().length;
      const outcome = await collectAll(deps, undefined);
      t.same(outcome.pairs, good.pairs, 'the last good data is kept');
      t.same(good.pairs, [{ key: 'ec2', value: { 'instance-id': 'i-last-good' } }]);
      t.equal(outcome.failures.length, 1);
      const lines = tc.captured.lines.slice(before).filter((l) => ['warn', 'error', 'fatal'].includes(String(l.level)));
      t.equal(lines.length, 1, 'one log line');
      t.equal(lines[0]?.msg, 'source unavailable');
      t.match(lines[0]?.reason, bad.reason, String(lines[0]?.reason));
      t.match(lines[0]?.reason, /connection refused/, 'the metadata service failure is in the same line');
      const calls = s.calls().slice(callsBefore);
      t.equal(
        calls.filter((c) => c.startsWith('umount')).length,
        bad.canMount ? 1 : 0,
        'everything mounted was unmounted',
      );
      t.same(leftovers(s.root), [], 'no temp mount point left');
    });
  }

  t.test('no config drive: blkid is asked once per process, not on every poll', async (t) => {
    const s = await driveSetup(t, 'iso', { [EC2_FILE]: JSON.stringify(EC2_DOC) });
    const bin = path.join(s.root, 'work/fake-bin');
    const real = execFileSync(
      'sh',
      ['-c', `PATH=${process.env.PATH?.split(':').slice(1).join(':')} command -v blkid`],
      { encoding: 'utf8' },
    ).trim();
    writeFileSync(
      path.join(bin, 'blkid'),
      `#!/bin/sh\necho "blkid $*" >> '${path.join(s.root, 'work/calls')}'\nexec ${real} "$@"\n`,
      { mode: 0o755 },
    );
    // This root's /dev has no config-2 device: the attached drive belongs to no root here.
    rmSync(path.join(s.root, s.device));
    const tc = await collectorContext('ec2', { root: s.root, cli: s.cli });
    for (let i = 0; i < 3; i++) await ec2Collector.collect(tc.ctx).catch(() => undefined);
    t.same(s.calls(), ['blkid -c /dev/null -o export -t LABEL=config-2']);
  });

  t.test('a hanging blkid is killed at [ec2] timeout; the source is unavailable, not stuck', async (t) => {
    const s = await driveSetup(t, 'iso', { [EC2_FILE]: JSON.stringify(EC2_DOC) });
    const bin = path.join(s.root, 'work/fake-bin');
    writeFileSync(path.join(bin, 'blkid'), '#!/bin/sh\nexec sleep 60\n', { mode: 0o755 });
    const tc = await collectorContext('ec2', { root: s.root, cli: { ec2: { ...s.cli.ec2, timeout: 0.5 } } });
    const err = await ec2Collector.collect(tc.ctx).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    t.match(
      err,
      {
        message:
          /looking for a config drive failed: blkid gave no result within 0.5 s and was killed; .*connection refused/,
      },
      String(err?.message),
    );
  });
});
