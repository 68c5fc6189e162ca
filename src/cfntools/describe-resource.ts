import { parsePythonJson } from '../util/python-json-parse.js';
import { describeStackResourceUrl } from '../collectors/cfn-signature.js';
import { parseXml, type XmlElement } from '../collectors/cfn-response.js';
import { errorMessage } from '../errors.js';
import { isJsonObject } from '../util/json-merge.js';
import type { HttpClient } from '../http/types.js';
import { redactUrl } from '../log/redact.js';
import { CfnMetadataError } from './cfn-errors.js';
import type { CfnCredentials } from './credentials.js';

// One resource's metadata from heat-api-cfn: DescribeStackResource signed with the resource's keys (signature v2, as
// the cfn collector signs; heat-api-cfn checks v2 and v4 alike through Keystone), asked for as JSON (ContentType=JSON,
// as heat-cfntools' boto asks; the collector reads the XML answer, as os-collect-config did), its Metadata taken.
// Every failure names the endpoint (without its signed query), the stack and the resource.

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
    json: true,
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
  let answer: unknown;
  try {
    answer = parsePythonJson(body);
  } catch {
    throw new CfnMetadataError(`heat-api-cfn at ${shown} sent an answer that is not JSON for ${what}`);
  }
  const detail = member(answer, [
    'DescribeStackResourceResponse',
    'DescribeStackResourceResult',
    'StackResourceDetail',
  ]);
  const metadata = member(detail, ['Metadata']);
  if (metadata === undefined) throw new CfnMetadataError(`heat-api-cfn at ${shown} sent no Metadata for ${what}`);
  // Heat sends the object; an answer that carries it as JSON text (as the XML answer does) is read the same.
  if (typeof metadata !== 'string') return metadata;
  try {
    return parsePythonJson(metadata);
  } catch {
    throw new CfnMetadataError(`the Metadata heat-api-cfn sent for ${what} is not JSON`);
  }
}

/** The value at `names` in a JSON document, or undefined. */
function member(doc: unknown, names: readonly string[]): unknown {
  let at = doc;
  for (const name of names)
    at = isJsonObject(at) && Object.prototype.hasOwnProperty.call(at, name) ? at[name] : undefined;
  return at;
}

function path(el: XmlElement, names: readonly string[]): XmlElement | undefined {
  let at: XmlElement | undefined = el;
  for (const name of names) at = at?.children.find((c) => c.name === name || c.name.endsWith(`:${name}`));
  return at;
}

/**
 * ": Code: Message" of an AWS error document, when the body is one: JSON from heat-api-cfn's API, XML from what
 * answers before it (the Keystone check of the keys).
 */
function awsError(body: string): string {
  const [code, message] = jsonErrorFields(body) ?? xmlErrorFields(body) ?? [];
  const text = [code, message].filter(Boolean).join(': ');
  return text ? `: ${text.slice(0, 300)}` : '';
}

function jsonErrorFields(body: string): [string?, string?] | undefined {
  let error: unknown;
  try {
    error = member(parsePythonJson(body), ['ErrorResponse', 'Error']);
  } catch {
    return undefined;
  }
  if (!isJsonObject(error)) return undefined;
  const text = (v: unknown) => (typeof v === 'string' ? v.trim() : undefined);
  return [text(error.Code), text(error.Message)];
}

function xmlErrorFields(body: string): [string?, string?] | undefined {
  try {
    const error = path(parseXml(body), ['Error']);
    return error ? [path(error, ['Code'])?.text.trim(), path(error, ['Message'])?.text.trim()] : undefined;
  } catch {
    return undefined;
  }
}
