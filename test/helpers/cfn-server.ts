import { timingSafeEqual } from 'node:crypto';
import { signV2 } from './orchestrator/sigv2.js';
import { checkV4 } from './orchestrator/sigv4.js';
import { sendFault, startTestServer, type Fault, type TestServer } from './http-test-server.js';

// heat-api-cfn's DescribeStackResource as the instance meets it: GET <base>/v1/ with the signed query (the agent's v2)
// or a v4 Authorization header (boto's, for Debian's heat-cfntools). The server recomputes the signature from the
// secret (test-side signers, written apart from the agent's) over the Host header it received, and answers 403
// AccessDenied on any mismatch, as heat-api-cfn does after Keystone's ec2tokens check. The metadata is resource text
// (JSON) inside the XML answer, or the object itself in the JSON answer boto asks for.

export interface CfnServer extends TestServer {
  readonly metadataUrl: string;
  accessKey: string;
  secret: string;
  stackName: string;
  /** Logical resource id -> Metadata JSON text (usually JSON.stringify of an object). */
  readonly resources: Map<string, string>;
  /** Signatures the server accepted and refused, in order. */
  readonly verdicts: boolean[];
  fault: Fault | undefined;
  /** A body to send instead of the normal answer, as it is (malformed-answer tests). */
  rawBody: string | undefined;
}

export async function startCfnServer(
  options: {
    accessKey?: string;
    secret?: string;
    stackName?: string;
    capBytes?: number;
    /** Reads a resource's metadata text at each request (when given, instead of `resources`). */
    resourceText?: (resource: string) => string | undefined;
  } = {},
): Promise<CfnServer> {
  const state = {
    accessKey: options.accessKey ?? 'AKCFNTEST0001',
    secret: options.secret ?? 'cfn-secret-key-0123456789',
    stackName: options.stackName ?? 'demo-stack',
    resources: new Map<string, string>(),
    verdicts: [] as boolean[],
    fault: undefined as Fault | undefined,
    rawBody: undefined as string | undefined,
  };
  const server = await startTestServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://x');
    if (state.fault) {
      return sendFault(
        state.fault,
        req,
        res,
        {
          wrongType: xmlFor('"a string, not an object"'),
          garbage: 'not xml <<< at all',
          contentType: 'application/xml',
        },
        options.capBytes,
      );
    }
    if (u.pathname !== '/v1/' || req.method !== 'GET') {
      res.writeHead(404);
      return void res.end('no such path');
    }
    const q = Object.fromEntries(u.searchParams);
    // boto 2 (heat-cfntools) signs with v4 in a header; the agent with v2 in the query. heat-api-cfn takes both.
    const v4 = checkV4(req, u, () => state.secret);
    const expected = signV2(state.secret, req.method, req.headers.host ?? '', u.pathname, q);
    const ok = v4
      ? v4.ok && v4.accessKey === state.accessKey
      : q.AWSAccessKeyId === state.accessKey && q.SignatureVersion === '2' && same(q.Signature ?? '', expected);
    state.verdicts.push(ok);
    if (!ok) {
      res.writeHead(403, { 'content-type': 'application/xml' });
      return void res.end(
        '<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>User is not authorized to perform action</Message></Error></ErrorResponse>',
      );
    }
    if (q.Action !== 'DescribeStackResource' || q.StackName !== state.stackName) {
      res.writeHead(400, { 'content-type': 'application/xml' });
      return void res.end('<ErrorResponse><Error><Code>ValidationError</Code></Error></ErrorResponse>');
    }
    if (state.rawBody !== undefined) {
      res.writeHead(200, { 'content-type': 'application/xml' });
      return void res.end(state.rawBody);
    }
    const md = options.resourceText
      ? options.resourceText(q.LogicalResourceId ?? '')
      : state.resources.get(q.LogicalResourceId ?? '');
    if (md === undefined) {
      res.writeHead(404, { 'content-type': 'application/xml' });
      return void res.end('<ErrorResponse><Error><Code>ResourceNotFound</Code></Error></ErrorResponse>');
    }
    // With ContentType=JSON (boto's) heat-api-cfn answers JSON, the metadata as an object.
    if (q.ContentType === 'JSON') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(
        `{"DescribeStackResourceResponse": {"DescribeStackResourceResult": {"StackResourceDetail": {"LogicalResourceId": ${JSON.stringify(q.LogicalResourceId ?? '')}, "Metadata": ${md}}}}}`,
      );
    }
    res.writeHead(200, { 'content-type': 'application/xml' });
    res.end(xmlFor(md, q.LogicalResourceId ?? ''));
  });
  return {
    ...server,
    metadataUrl: `${server.url}/v1/`,
    resources: state.resources,
    verdicts: state.verdicts,
    get accessKey() {
      return state.accessKey;
    },
    set accessKey(v) {
      state.accessKey = v;
    },
    get secret() {
      return state.secret;
    },
    set secret(v) {
      state.secret = v;
    },
    get stackName() {
      return state.stackName;
    },
    set stackName(v) {
      state.stackName = v;
    },
    get fault() {
      return state.fault;
    },
    set fault(v) {
      state.fault = v;
    },
    get rawBody() {
      return state.rawBody;
    },
    set rawBody(v) {
      state.rawBody = v;
    },
  };
}

/** The response shape heat-api-cfn serialises (no namespace), with the metadata escaped as element text. */
export function xmlFor(metadataJson: string, resource = 'server'): string {
  return (
    '<DescribeStackResourceResponse><DescribeStackResourceResult><StackResourceDetail>' +
    `<StackId>arn:openstack:heat::proj:stacks/demo-stack/0f4ba2e3</StackId><ResourceStatus>CREATE_COMPLETE</ResourceStatus>` +
    `<LogicalResourceId>${resource}</LogicalResourceId><Metadata>${escapeXml(metadataJson)}</Metadata>` +
    '</StackResourceDetail></DescribeStackResourceResult></DescribeStackResourceResponse>'
  );
}

export function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
