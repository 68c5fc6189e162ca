import type { HttpClient } from '../http/types.js';
import type { PathMapper } from '../util/rooted-path.js';
import type { HookLog } from '../hooks/kit/hook-log.js';
import { CfnMetadataError, NoMetadataError } from './cfn-errors.js';
import type { CfnCredentials } from './credentials.js';
import { describeResourceMetadata } from './describe-resource.js';
import type { CfnEndpoint } from './endpoint.js';
import { readLocalMetadata } from './metadata-store.js';

// Where a command's metadata comes from, as heat-cfntools' Metadata.retrieve decides: with credentials, heat-api-cfn's
// answer for the stack's resource (a failure is the command's failure, as heat-cfntools' was); without, the local copy
// (last_metadata_<resource>, last_metadata, then Heat's boot data cfn-init-data), which is how heat-config's cfn-init
// hook and a first boot's cfn-init without keys work.

export interface RetrieveOptions {
  readonly stack?: string | undefined;
  readonly resource?: string | undefined;
  readonly credentials?: CfnCredentials | undefined;
  /** heat-api-cfn's URL; asked only when there are credentials. */
  readonly endpoint: () => Promise<CfnEndpoint | undefined>;
  readonly http: () => Promise<HttpClient>;
  readonly paths: PathMapper;
  readonly log: HookLog;
  readonly timeoutSeconds: number;
  readonly caFile?: string | undefined;
  readonly signal?: AbortSignal | undefined;
}

export interface Retrieved {
  readonly metadata: unknown;
  /** "heat-api-cfn" or the local file it was read from. */
  readonly from: string;
}

export async function retrieveMetadata(o: RetrieveOptions): Promise<Retrieved> {
  if (o.credentials) {
    if (!o.stack || !o.resource)
      throw new CfnMetadataError('keys were given but no stack or resource: give -s STACK and -r RESOURCE with them');
    const endpoint = await o.endpoint();
    if (!endpoint)
      throw new CfnMetadataError(
        'no CFN endpoint is known: /var/lib/heat-cfntools/cfn-metadata-server and cfn-boto-cfg are missing and the agent has no [cfn] metadata_url (give --url)',
      );
    o.log.info('fetching metadata', {
      stack: o.stack,
      resource: o.resource,
      endpoint: endpoint.url,
      from: endpoint.from,
    });
    const metadata = await describeResourceMetadata(await o.http(), {
      endpoint: endpoint.url,
      stack: o.stack,
      resource: o.resource,
      credentials: o.credentials,
      timeoutSeconds: o.timeoutSeconds,
      caFile: o.caFile,
      signal: o.signal,
    });
    return { metadata, from: 'heat-api-cfn' };
  }
  o.log.info('no credentials: reading the local copy of the metadata', { resource: o.resource ?? '' });
  const local = await readLocalMetadata(o.paths, o.resource);
  if (!local)
    throw new NoMetadataError(
      'no credentials were given and there is no local copy of the metadata (/var/cache/heat-cfntools/last_metadata, /var/lib/heat-cfntools/cfn-init-data): give --access-key and --secret-key, or --credential-file',
    );
  try {
    return { metadata: JSON.parse(local.text) as unknown, from: local.file };
  } catch {
    throw new CfnMetadataError(`the local metadata ${local.file} is not JSON`);
  }
}
