import { setOwnKey } from '../util/json-merge.js';

// A config drive without ec2/latest/meta-data.json (nova can leave the EC2 tree out) still has OpenStack's
// openstack/latest/meta_data.json. Templates written for the ec2 source name EC2 keys, so the keys both formats carry
// are also given their EC2 names; every other key is kept under its OpenStack name. Values are strings as the
// metadata service walk gives them. random_seed is dropped: it is entropy meant to be used once at boot, not kept
// in a cache file. The mapping (docs/config-drive.md):
//   uuid -> instance-id, hostname -> hostname and local-hostname, availability_zone -> placement.availability-zone,
//   launch_index -> ami-launch-index, public_keys {name: key} -> public-keys {"0": {"openssh-key": key}, ...}.

export function ec2FromOpenstack(doc: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  // A key named "__proto__" in the drive's JSON is data, not a prototype change.
  const set = (key: string, value: unknown): void => setOwnKey(out, key, value);
  const text = (v: unknown): string | undefined =>
    typeof v === 'string' ? v : typeof v === 'number' ? String(v) : undefined;

  const uuid = text(doc.uuid);
  if (uuid !== undefined) set('instance-id', uuid);
  const hostname = text(doc.hostname);
  if (hostname !== undefined) {
    set('hostname', hostname);
    set('local-hostname', hostname);
  }
  const zone = text(doc.availability_zone);
  if (zone !== undefined) set('placement', { 'availability-zone': zone });
  const index = text(doc.launch_index);
  if (index !== undefined) set('ami-launch-index', index);
  if (doc.public_keys && typeof doc.public_keys === 'object' && !Array.isArray(doc.public_keys)) {
    const keys: Record<string, unknown> = {};
    let n = 0;
    for (const value of Object.values(doc.public_keys as Record<string, unknown>)) {
      if (typeof value === 'string') keys[String(n++)] = { 'openssh-key': value };
    }
    if (n > 0) set('public-keys', keys);
  }
  for (const [key, value] of Object.entries(doc)) {
    if (key === 'random_seed' || Object.prototype.hasOwnProperty.call(out, key)) continue;
    set(key, value);
  }
  return out;
}
