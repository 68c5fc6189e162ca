import { readFile, stat } from 'node:fs/promises';
import { redactUrl } from '../log/redact.js';
import type { PathMapper } from '../util/rooted-path.js';
import { CfnMetadataError } from './cfn-errors.js';
import { cfnPath } from './cfn-paths.js';
import { emptyIni, readIni } from './python-ini.js';

// heat-api-cfn's URL for DescribeStackResource, first found of:
//   1. the command's --url;
//   2. /var/lib/heat-cfntools/cfn-metadata-server, which Heat's boot data writes (heat-cfntools took only its port, and
//      no port at all from newer Heat's "http://host:8000/v1/", falling back to 8000; the whole URL is used here);
//   3. /var/lib/heat-cfntools/cfn-boto-cfg's cfn_region_endpoint (the host heat-cfntools used), on port 8000;
//   4. the agent's own [cfn] metadata_url.
// Whatever the source, the path is heat-api-cfn's /v1/. None found: no request is made (heat-cfntools would have asked
// cloudformation.us-east-1.amazonaws.com).

export interface EndpointSources {
  readonly url?: string | undefined;
  readonly paths: PathMapper;
  /** The agent's [cfn] metadata_url, when its configuration has one. */
  readonly configured?: string | undefined;
}

export interface CfnEndpoint {
  readonly url: string;
  /** Where it came from, for the log. */
  readonly from: string;
}

const DEFAULT_CFN_PORT = 8000;
const MAX_HINT_BYTES = 4096;

export async function cfnEndpoint(sources: EndpointSources): Promise<CfnEndpoint | undefined> {
  if (sources.url) return { url: apiUrl(sources.url, '--url'), from: '--url' };
  const server = await smallFile(cfnPath(sources.paths, 'metadataServer'));
  if (server) return { url: apiUrl(server, 'cfn-metadata-server'), from: 'cfn-metadata-server' };
  const boto = await smallFile(cfnPath(sources.paths, 'botoConfig'));
  const host = boto === undefined ? undefined : botoEndpoint(boto);
  if (host) {
    const bracketed = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
    return { url: apiUrl(`http://${bracketed}:${DEFAULT_CFN_PORT}`, 'cfn-boto-cfg'), from: 'cfn-boto-cfg' };
  }
  if (sources.configured) return { url: apiUrl(sources.configured, '[cfn] metadata_url'), from: '[cfn] metadata_url' };
  return undefined;
}

/** The URL with heat-api-cfn's /v1/ path (kept when it is there, added when it is not). */
export function apiUrl(text: string, from: string): string {
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    throw new CfnMetadataError(`the CFN endpoint from ${from} is not a URL: ${redactUrl(text.trim()).slice(0, 200)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new CfnMetadataError(`the CFN endpoint from ${from} must be http or https, not ${url.protocol}`);
  const base = url.pathname.replace(/\/+$/, '');
  url.pathname = `${base.endsWith('/v1') ? base : `${base}/v1`}/`;
  url.search = '';
  url.hash = '';
  return url.toString();
}

function botoEndpoint(text: string): string | undefined {
  const doc = emptyIni();
  try {
    readIni(doc, text, 'cfn-boto-cfg');
  } catch {
    return undefined;
  }
  const section = doc.sections.find((s) => s.name === 'Boto');
  const host = section ? section.values.get('cfn_region_endpoint') : undefined;
  return host && /^[\w.:[\]-]+$/.test(host) ? host : undefined;
}

async function smallFile(file: string): Promise<string | undefined> {
  try {
    const st = await stat(file);
    if (!st.isFile() || st.size > MAX_HINT_BYTES) return undefined;
    const text = (await readFile(file, 'utf8')).trim();
    return text === '' ? undefined : text;
  } catch {
    return undefined;
  }
}
