import { describeStackResourceUrl } from '../collectors/cfn-signature.js';
import { parseXml, type XmlElement } from '../collectors/cfn-response.js';
import { errorMessage } from '../errors.js';
import type { HttpClient } from '../http/types.js';
import { redactUrl } from '../log/redact.js';
import { CfnMetadataError } from './cfn-errors.js';
import type { CfnCredentials } from './credentials.js';

// One resource's metadata from heat-api-cfn: DescribeStackResource signed with the resource's keys (signature v2, as
// the cfn collector signs; heat-api-cfn checks v2 and v4 alike through Keystone), the Metadata element of the answer
// parsed as JSON. Every failure names the endpoint (without its signed query), the stack and the resource.

export interface DescribeRequest {
  readonly endpoint: string;
  readonly stack: string;
  readonly resource: string;
  readonly credentials: CfnCredentials;
  readonly timeoutSeconds: number;
  readonly caFile?: string | undefined;
  readonly signal?: AbortSignal | undefined;
}

export async function describeResourceMetadata(http: HttpClient, req: DescribeRequest): Promise<unknown> {
  const shown = redactUrl(req.endpoint);
  const what = `resource ${req.resource} of stack ${req.stack}`;
  const url = describeStackResourceUrl(req.endpoint, {
    stackName: req.stack,
    resource: req.resource,
    accessKeyId: req.credentials.accessKey,
    secret: req.credentials.secretKey,
  });
  let res;
  try {
    res = await http.request({
      url,
      timeoutSeconds: req.timeoutSeconds,
      ...(req.caFile ? { caFile: req.caFile } : {}),
      ...(req.signal ? { signal: req.signal } : {}),
    });
  } catch (err) {
    throw new CfnMetadataError(`cannot reach heat-api-cfn at ${shown} for ${what}: ${errorMessage(err)}`, {
      cause: err,
    });
  }
  const body = res.body.toString('utf8');
  if (res.statusCode === 401 || res.statusCode === 403)
    throw new CfnMetadataError(
      `heat-api-cfn at ${shown} refused the keys for ${what} (${res.statusCode}${awsError(body)}): check --access-key and --secret-key, or the credential file`,
    );
  if (res.statusCode < 200 || res.statusCode > 299)
    throw new CfnMetadataError(
      `heat-api-cfn at ${shown} answered ${res.statusCode}${awsError(body)} for ${what}: check the stack and resource names`,
    );
  let detail: XmlElement | undefined;
  try {
    detail = path(parseXml(body), ['DescribeStackResourceResult', 'StackResourceDetail']);
  } catch (err) {
    throw new CfnMetadataError(`heat-api-cfn at ${shown} sent malformed XML for ${what}: ${errorMessage(err)}`);
  }
  const metadata = detail ? path(detail, ['Metadata']) : undefined;
  if (!metadata) throw new CfnMetadataError(`heat-api-cfn at ${shown} sent no Metadata for ${what}`);
  try {
    return JSON.parse(metadata.text) as unknown;
  } catch {
    throw new CfnMetadataError(`the Metadata heat-api-cfn sent for ${what} is not JSON`);
  }
}

function path(el: XmlElement, names: readonly string[]): XmlElement | undefined {
  let at: XmlElement | undefined = el;
  for (const name of names) at = at?.children.find((c) => c.name === name || c.name.endsWith(`:${name}`));
  return at;
}

/** ": Code: Message" of an AWS error document, when the body is one. */
function awsError(body: string): string {
  try {
    const error = path(parseXml(body), ['Error']);
    const code = error && path(error, ['Code'])?.text.trim();
    const message = error && path(error, ['Message'])?.text.trim();
    const text = [code, message].filter(Boolean).join(': ');
    return text ? `: ${text.slice(0, 300)}` : '';
  } catch {
    return '';
  }
}
