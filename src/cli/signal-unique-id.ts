import { hostname } from 'node:os';
import path from 'node:path';
import type { LoadedConfig } from '../config/load.js';
import { isJsonObject } from '../util/json-merge.js';
import { readJsonFile } from '../util/read-json-file.js';

// cfn-signal's default UniqueId when -i is not given: the server's Nova uuid, else the host name. Upstream read
// /var/lib/heat-cfntools/nova_meta.json and, when that file was missing, fetched it from the metadata service with
// curl at signal time. Here only local files are read: that file, then the agent's cached EC2 metadata (instance-id,
// the same uuid); a signal must be queued even while the network is down.

const MAX_BYTES = 1024 * 1024;

export async function defaultUniqueId(loaded: LoadedConfig): Promise<string> {
  const nova = await readJsonFile(loaded.paths.map('/var/lib/heat-cfntools/nova_meta.json'), MAX_BYTES);
  if (nova.ok && isJsonObject(nova.value) && typeof nova.value.uuid === 'string' && nova.value.uuid !== '')
    return nova.value.uuid;
  const ec2 = await readJsonFile(path.join(loaded.config.DEFAULT.cachedir, 'ec2.json'), MAX_BYTES);
  if (ec2.ok && isJsonObject(ec2.value)) {
    const id = ec2.value['instance-id'];
    if (typeof id === 'string' && id !== '') return id;
  }
  return hostname();
}
