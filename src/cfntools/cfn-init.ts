import { errorMessage } from '../errors.js';
import type { HttpClient } from '../http/types.js';
import type { PathMapper } from '../util/rooted-path.js';
import type { HookContext } from '../hooks/contract.js';
import { parseInit } from '../hooks/cfn-init/model.js';
import { createInitRun } from '../hooks/cfn-init/run-state.js';
import { runConfigs } from '../hooks/cfn-init/runner.js';
import { CfnMetadataError } from './cfn-errors.js';
import type { CfnCredentials } from './credentials.js';
import type { CfnEndpoint } from './endpoint.js';
import { saveMetadata } from './metadata-store.js';
import { retrieveMetadata } from './retrieve.js';

// `cfn-init`: heat-cfntools' Metadata.retrieve then cfn_init. The metadata is read (heat-api-cfn with keys, else the
// local copy), saved as last_metadata (and last_metadata_<resource>) for cfn-hup whatever it holds, and its
// AWS::CloudFormation::Init section applied by the interpreter the cfn-init hook uses (src/hooks/cfn-init/): the
// selected configSets, or the config named "config". Throws what stops the run (CfnMetadataError, CfnCredentialsError,
// HookFailure naming the resource); the command turns it into exit status 1, as heat-cfntools.

export const INIT_KEY = 'AWS::CloudFormation::Init';

export interface CfnInitOptions {
  readonly stack?: string | undefined;
  readonly resource?: string | undefined;
  readonly configsets?: string | undefined;
  readonly credentials?: CfnCredentials | undefined;
  readonly endpoint: () => Promise<CfnEndpoint | undefined>;
  readonly http: () => Promise<HttpClient>;
  readonly paths: PathMapper;
  /** The environment commands get, the log, and how tools start. */
  readonly ctx: HookContext;
  /** Seconds a request to heat-api-cfn may stay silent. */
  readonly timeoutSeconds: number;
  /** Seconds a download (a file's source, an archive of sources) may stay silent. */
  readonly fetchTimeoutSeconds: number;
  readonly caFile?: string | undefined;
}

export async function cfnInit(o: CfnInitOptions): Promise<void> {
  const { log } = o.ctx;
  const { metadata, from } = await retrieveMetadata({ ...o, log, signal: o.ctx.signal });
  log.info('metadata read', { from });
  try {
    await saveMetadata(o.paths, metadata, o.resource);
  } catch (err) {
    // cfn-hup then judges the next change against an older copy; the run itself can go on.
    log.warn('could not save the metadata for cfn-hup', { reason: errorMessage(err) });
  }
  const init = initSection(metadata);
  if (!init)
    throw new CfnMetadataError(
      `the metadata from ${from} has no ${INIT_KEY} section (or it is empty): nothing to apply`,
    );
  const configs = parseInit(init, o.configsets);
  const root = o.paths.root === '/' ? '' : o.paths.root;
  const run = createInitRun(o.ctx, root, o.fetchTimeoutSeconds);
  try {
    await runConfigs(run, configs);
  } finally {
    const stdout = run.stdout.join('');
    const stderr = run.stderr.join('');
    if (stdout || stderr) log.info('commands printed', { stdout, stderr });
  }
  log.info('cfn-init completed', { configs: configs.map((c) => c.name).join(',') });
}

/** The AWS::CloudFormation::Init section when the metadata has a non-empty one (heat-cfntools' _is_valid_metadata). */
export function initSection(metadata: unknown): unknown {
  if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)) return undefined;
  const init = (metadata as Record<string, unknown>)[INIT_KEY];
  if (init === undefined || init === null || init === false || init === '' || init === 0) return undefined;
  if (typeof init === 'object' && Object.keys(init).length === 0) return undefined;
  return init;
}
